"""Key help and palette entries, generated from the bindings (keymap applied), never by hand."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType
from textual.screen import Screen

from workbench.core.palette import PaletteCommand
from workbench.screens.base import StepScreen
from workbench.screens.confirm import ConfirmScreen
from workbench.screens.modals import HelpScreen, KeyRow, RecoverScreen
from workbench.widgets.field_editor import ChoiceField, FieldEditor
from workbench.widgets.number_field import NumberField

if TYPE_CHECKING:
    from workbench.app import WorkbenchApp


def binding_owners(app: WorkbenchApp) -> list[tuple[str, list[Binding]]]:
    """Every place the workbench defines keys, named for the help screen."""
    jumps = [
        b
        for bindings in app._bindings.key_to_bindings.values()
        for b in bindings
        if b.id and b.id.startswith("goto-")
    ]
    owners: list[tuple[str, Iterable[BindingType]]] = [
        ("everywhere", app.BINDINGS),
        ("everywhere", jumps),
        ("step screens", StepScreen.BINDINGS),
        ("fields", FieldEditor.BINDINGS),
        ("number fields", NumberField.BINDINGS),
        ("choice fields", ChoiceField.BINDINGS),
        *step_screen_bindings(app),
        ("help", HelpScreen.BINDINGS),
        ("draft dialog", RecoverScreen.BINDINGS),
        ("confirm dialog", ConfirmScreen.BINDINGS),
    ]
    return [(where, [b for b in owner if isinstance(b, Binding)]) for where, owner in owners]


def step_screen_bindings(app: WorkbenchApp) -> list[tuple[str, Iterable[BindingType]]]:
    """The keys each step's screen adds to StepScreen's (its class's and its bases' own
    BINDINGS), each binding once, named for the first step that has it."""
    seen: set[int] = set()
    found = []
    for step in app.steps:
        if not isinstance(step.screen, type):
            continue
        classes = [
            c for c in step.screen.__mro__ if issubclass(c, StepScreen) and c is not StepScreen
        ]
        bindings = [
            b
            for cls in classes
            for b in vars(cls).get("BINDINGS", [])
            if isinstance(b, Binding) and id(b) not in seen
        ]
        seen |= {id(b) for b in bindings}
        if bindings:
            found.append((f"{step.title} step", bindings))
    return found


def binding_ids(app: WorkbenchApp) -> list[str]:
    """Every binding id a keymap may remap."""
    return [b.id for _, owner in binding_owners(app) for b in owner if b.id]


def key_display(app: WorkbenchApp, binding: Binding) -> str:
    """The key(s) a binding is on now (keymap applied), as shown to users."""
    keys = app._keymap.get(binding.id, binding.key) if binding.id else binding.key
    return " / ".join(app.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))


def help_rows(app: WorkbenchApp) -> list[KeyRow]:
    """The help screen's table."""
    return [
        KeyRow(where, key_display(app, b), b.tooltip or b.description or b.action, b.id or "")
        for where, owner in binding_owners(app)
        for b in owner
    ]


def palette_commands(app: WorkbenchApp, screen: Screen) -> list[PaletteCommand]:
    """The app's and `screen`'s described actions, then every step and every theme."""
    commands = {}
    for owner, node in ((app.BINDINGS, app), (type(screen).BINDINGS, screen)):
        for b in owner:
            if not isinstance(b, Binding) or b.action == "command_palette" or not b.description:
                continue
            run = partial(app.run_action, b.action, node)
            # The first binding of an action names its key (f1 for Help, not its ? alias).
            title = b.tooltip or b.description  # the footer's short label, spelled out
            commands.setdefault(title, PaletteCommand(title, key_display(app, b), run))
    for number, step in enumerate(app.steps, start=1):
        title = f"Go to step {number}: {step.title}"
        commands[title] = PaletteCommand(title, step.purpose, partial(app.goto_step, step.id))
    for name in app.workbench_themes():
        title = f"Theme: {name}"
        commands[title] = PaletteCommand(
            title, "Switch the colour theme", partial(app.set_theme, name)
        )
    return list(commands.values())
