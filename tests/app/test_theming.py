"""Themes load from themes/, fall back cleanly, and convert to plotext colours (ansi included)."""

from __future__ import annotations

from textual.color import Color

from workbench.app import WorkbenchApp
from workbench.core.theming import (
    DEFAULT_THEME,
    NO_COLOR,
    apply_theme,
    load_themes,
    plot_color,
    plot_theme,
)

from .conftest import working_for


def test_shipped_themes_include_dark_light_and_high_contrast() -> None:
    loaded = load_themes()
    assert loaded.warnings == ()
    themes = {t.name: t for t in loaded.themes}
    assert {"workbench-dark", "workbench-light", "workbench-high-contrast"} <= set(themes)
    assert themes["workbench-dark"].dark and not themes["workbench-light"].dark
    assert themes["workbench-ansi"].ansi


def test_unknown_theme_falls_back_to_the_default(packet_file) -> None:
    app = WorkbenchApp(working_for(packet_file))
    warning = apply_theme(app, "textual-ansi")  # removed from Textual in 8.2.5
    assert app.theme == DEFAULT_THEME
    assert warning.startswith("theme 'textual-ansi' not found; using workbench-dark")
    assert apply_theme(app, "workbench-light") == "" and app.theme == "workbench-light"


def test_missing_default_falls_back_to_textuals_own(packet_file) -> None:
    app = WorkbenchApp(working_for(packet_file))
    app.theme = "textual-dark"
    app.unregister_theme(DEFAULT_THEME)
    warning = apply_theme(app, "nope")
    assert app.theme == "textual-dark"
    assert "using textual-dark" in warning


def test_plot_colors_cope_with_ansi_hex_alpha_and_junk() -> None:
    assert plot_color("ansi_red") == 1
    assert plot_color("ansi_bright_blue") == 12
    assert plot_color("ansi_default") == NO_COLOR
    assert plot_color("#4C9BE8") == (0x4C, 0x9B, 0xE8)
    assert plot_color("#ffffff 50%", background=(0, 0, 0)) == (127, 127, 127)
    assert plot_color("#ff000080", background=(255, 255, 255)) == (255, 127, 127)
    assert plot_color("auto 90%") == NO_COLOR
    assert plot_color("not-a-colour") == NO_COLOR
    assert plot_color(None) == NO_COLOR


def test_plot_theme_of_each_shipped_theme_is_plotext_ready(packet_file) -> None:
    for theme in load_themes().themes:
        variables = theme.to_color_system().generate()
        colours = plot_theme(variables)
        every = [colours.canvas, colours.axes, colours.ticks, *colours.series]
        assert all(c == NO_COLOR or isinstance(c, int | tuple) for c in every), theme.name
        if theme.ansi:
            assert colours.canvas == NO_COLOR and colours.series[0] == 4  # ansi_blue
        else:
            assert isinstance(colours.canvas, tuple)
        listed = colours.as_plotext_theme()
        assert len(listed) == 5 and listed[4] == list(colours.series)


def test_no_color_makes_every_plot_colour_default() -> None:
    theme = load_themes().themes[0]
    colours = plot_theme(theme.to_color_system().generate(), no_color=True)
    assert {colours.canvas, colours.axes, colours.ticks, *colours.series} == {NO_COLOR}


async def test_the_theme_chosen_at_start_styles_the_first_screen_with_one_parse(
    make_app,
) -> None:
    """The theme set as the app is built is in effect on the first screen, without Textual's
    start-up CSS refresh parsing every stylesheet into a copy it then threw away; a theme
    chosen later still restyles what is on screen."""
    from textual.css import stylesheet

    parsed: list[object] = []
    through = stylesheet.parse  # what the stylesheet parses each source with (when not cached)

    def counted(scope, css, read_from, *args, **kwargs):  # type: ignore[no-untyped-def]
        parsed.append(read_from)
        return through(scope, css, read_from, *args, **kwargs)

    stylesheet.parse = counted  # type: ignore[assignment]
    try:
        app = make_app(theme="workbench-light")  # drafts and keymap under a temporary home
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            app_css = [s for s in parsed if isinstance(s, tuple) and s[0].endswith("app.tcss")]
            assert len(app_css) == 1, app_css  # Textual's own refresh parsed it twice
            light = app.current_theme
            assert app.screen.styles.background == Color.parse(light.background)
            app.theme = "workbench-dark"
            await pilot.pause()
            assert app.screen.styles.background == Color.parse(app.current_theme.background)
            assert app.screen.styles.background != Color.parse(light.background)
    finally:
        stylesheet.parse = through  # type: ignore[assignment]
