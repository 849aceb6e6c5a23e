"""Typing into a field, moving focus between fields and a new sub-title do not lay out the
whole screen: the field input updates its own scroll limits (FieldInput), the footer rebuilds
only when the keys it shows change (Footer), the header repaints its title (Header). What is on
screen is what a full layout pass gives."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Header as TextualHeader
from textual.widgets import Input
from textual.widgets._header import HeaderTitle as TextualHeaderTitle

from workbench.widgets.field_editor import FieldInput
from workbench.widgets.footer import Footer
from workbench.widgets.header import Header

from .conftest import count_layouts


class Form(Screen):
    BINDINGS = [Binding("f4", "bell", "Ring", id="ring")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield FieldInput("8", id="one", compact=True)
            yield FieldInput("0.5", id="two", compact=True)
            yield Input("8", id="plain", compact=True)
        yield Footer(compact=True)


class Forms(App):
    CSS = "FieldInput { width: 12; } Input { width: 12; }"

    def on_mount(self) -> None:
        self.push_screen(Form())


async def test_typing_into_a_field_input_lays_out_nothing_but_scrolls_as_before() -> None:
    app = Forms()
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        field = screen.query_one("#one", FieldInput)
        field.focus()
        await pilot.pause()
        layouts = count_layouts(screen)
        await pilot.press("end", *"123456789012345")  # longer than the input: it scrolls
        await pilot.pause()
        assert field.value == "8123456789012345"
        assert layouts[0] == 0
        assert field.virtual_size.width == len(field.value) + 1
        assert field.scroll_x == field.max_scroll_x > 0  # the cursor at the end is in view
        plain = screen.query_one("#plain", Input)
        plain.focus()
        await pilot.pause()
        await pilot.press("end", *"123456789012345")  # the same keys into Textual's Input
        await pilot.pause()
        assert layouts[0] > 0  # it laid the screen out
        assert (plain.scroll_x, plain.virtual_size) == (field.scroll_x, field.virtual_size)
        screen.set_focus(None)  # both unfocused: the same look
        await pilot.pause()
        assert field.render_line(0).text == plain.render_line(0).text
        assert field.render_line(0).text.rstrip().endswith("12345")


async def test_the_footer_rebuilds_only_when_its_keys_change() -> None:
    app = Forms()
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        footer = screen.query_one(Footer)
        screen.query_one("#one", FieldInput).focus()
        await pilot.pause(0.1)
        composed = footer._shown_keys
        assert composed is not None and any(key[3] == "bell" for key in composed)
        recomposes = [0]
        through = footer.recompose

        async def counted():  # type: ignore[no-untyped-def]
            recomposes[0] += 1
            await through()

        footer.recompose = counted  # type: ignore[method-assign]
        screen.query_one("#two", FieldInput).focus()  # the same keys on screen
        await pilot.pause(0.1)
        assert recomposes[0] == 0
        screen.BINDINGS = []  # not what refreshes bindings: a new binding on the focused node
        focused = screen.query_one("#two", FieldInput)
        focused._bindings.bind("f9", "bell", "Ring twice")
        screen.refresh_bindings()
        await pilot.pause(0.1)
        assert recomposes[0] == 1
        assert any(key[2] == "Ring twice" for key in footer._shown_keys or ())


async def test_the_footer_rebuilds_once_for_keys_it_is_told_of_twice() -> None:
    """Focus moving into a field tells the footer twice of the same new keys before it has
    rebuilt: it rebuilds once; told of other keys after that, it rebuilds again."""
    app = Forms()
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        screen = app.screen
        footer = screen.query_one(Footer)
        focused = screen.query_one("#one", FieldInput)
        focused.focus()
        await pilot.pause(0.1)
        rebuilds: list[object] = []
        through = footer.call_after_refresh

        def counted(callback, *args, **kwargs):  # type: ignore[no-untyped-def]
            rebuilds.append(callback)
            return through(callback, *args, **kwargs)

        footer.call_after_refresh = counted  # type: ignore[method-assign]
        focused._bindings.bind("f9", "bell", "Ring twice")
        screen.refresh_bindings()
        screen.refresh_bindings()  # the same keys again, before the rebuild
        await pilot.pause(0.05)  # the footer hears of both (its signal queues them)
        assert len(rebuilds) == 1
        for _ in range(100):  # the rebuild runs after the next refresh
            await pilot.pause(0.02)
            if any(key[2] == "Ring twice" for key in footer._shown_keys or ()):
                break
        assert any(key[2] == "Ring twice" for key in footer._shown_keys or ())
        del focused._bindings.key_to_bindings["f9"]
        screen.refresh_bindings()  # back to the keys before: a rebuild again
        await pilot.pause(0.05)
        assert len(rebuilds) == 2
        for _ in range(100):
            await pilot.pause(0.02)
            if not any(key[2] == "Ring twice" for key in footer._shown_keys or ()):
                break
        assert not any(key[2] == "Ring twice" for key in footer._shown_keys or ())


async def test_an_editor_updated_before_it_composed_starts_with_the_newest_text() -> None:
    """A save or a recovered draft updates every editor of the form, also those of a piece
    still waiting to mount (their Input not composed yet): nothing fails, and the Input
    starts with what the editor was last given."""
    from workbench.core.form import input_fields
    from workbench.widgets.editors import editor_for
    from workbench.widgets.field_editor import ChoiceField

    spec = next(s for s in input_fields() if s.path[-1] == "dtype")
    editor = editor_for(spec, "bf16", id="dtype")
    assert isinstance(editor, ChoiceField) and editor.text == "bf16"
    editor.show_value("fp8")  # the packet's value changed: the field follows it
    assert editor.text == "fp8" and not editor.unapplied
    editor.show_value("fp8", pending_text="fp1")  # text typed but not applied (a draft's)
    assert editor.text == "fp1" and editor.unapplied
    app = Forms()
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        await app.screen.query_one(Vertical).mount(editor)
        await pilot.pause()
        assert editor.input.value == "fp1" and editor.unapplied


class Titled(App):
    """Our Header above Textual's, on one screen."""

    def compose(self) -> ComposeResult:
        yield Header(id="ours")
        yield TextualHeader(id="textual")


async def test_a_new_sub_title_repaints_the_header_and_lays_out_nothing() -> None:
    """The app's sub-title changes with every committed edit ("● unsaved"); Textual's Header
    laid the whole screen out for it, ours only repaints its title line."""
    app = Titled()
    async with app.run_test(size=(60, 6)) as pilot:
        await pilot.pause()
        screen = app.screen
        ours = screen.query_one("#ours", Header)
        theirs = screen.query_one("#textual", TextualHeader)
        title = ours.query_one(TextualHeaderTitle)
        await theirs.remove()  # ours alone on screen first
        await pilot.pause()
        layouts = count_layouts(screen)
        app.sub_title = "pkt-1  ● unsaved"
        await pilot.pause()
        assert layouts[0] == 0
        assert "● unsaved" in title.render_line(0).text
        await screen.mount(theirs)  # Textual's own, for comparison
        await pilot.pause()
        layouts[0] = 0
        app.sub_title = "pkt-1  ● unsaved  1 not applied"
        await pilot.pause()
        assert layouts[0] > 0  # Textual's Header laid the screen out
        shown = [h.query_one(TextualHeaderTitle).render_line(0).text for h in (ours, theirs)]
        assert "1 not applied" in shown[0] and shown[0] == shown[1]  # the same title


async def test_a_field_input_is_styled_once_it_is_in_the_dom_and_looks_as_textuals() -> None:
    """Input's constructor sets classes, and Textual restyled the new Input for each before
    it was even mounted (the stylesheet applies to every widget as it registers).
    FieldInput skips those: no restyle before it is in the DOM, the same styles as Textual's
    Input once mounted, and a class set after mounting still restyles it."""
    from textual.css.stylesheet import Stylesheet

    app = Forms()
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.pause()
        applied: list[tuple[str, bool]] = []
        through = Stylesheet.apply

        def counted(sheet, node, *args, **kwargs):  # type: ignore[no-untyped-def]
            if isinstance(node, Input):
                applied.append((node.id or "", node in app._registry))
            return through(sheet, node, *args, **kwargs)

        Stylesheet.apply = counted  # type: ignore[method-assign]
        try:
            ours = FieldInput("7", id="ours", compact=True)
            theirs = Input("7", id="theirs", compact=True)
            assert ("theirs", False) in applied  # Textual's: restyled before it is mounted
            assert ("ours", False) not in applied
            await app.screen.query_one(Vertical).mount(ours, theirs)
            await pilot.pause()
            assert ("ours", True) in applied  # styled as it registered
            assert ("ours", False) not in applied
        finally:
            Stylesheet.apply = through  # type: ignore[method-assign]
        assert ours.has_class("-textual-compact")
        assert not ours.has_class("-valid")  # its first text is set, not validated as typed
        assert (ours.styles.height, ours.styles.border) == (
            theirs.styles.height,
            theirs.styles.border,
        )
        assert ours.render_line(0).text == theirs.render_line(0).text
        tint = ours.styles.background_tint
        ours.add_class("-invalid")  # mounted: the class restyles it at once
        theirs.add_class("-invalid")
        assert ours.styles.background_tint != tint
        assert ours.styles.background_tint == theirs.styles.background_tint
