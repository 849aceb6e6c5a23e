"""Key help and palette entries, generated from the bindings (keymap applied), never by hand.

Textual-free of the workbench's own screens and widgets: the app hands in where its keys are
defined (`KeyOwner`s: the app, the step frame, the field editors, each step's screen class, the
dialogs), so core depends on no screen and the help never lists a key by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType
from textual.screen import Screen

from workbench.core.palette import PaletteCommand

if TYPE_CHECKING:
    from workbench.app import WorkbenchApp


@dataclass(frozen=True)
class KeyRow:
    """One line of the key help: where the key works, its key(s), what it does, its id."""

    where: str
    keys: str
    description: str
    binding_id: str


@dataclass(frozen=True)
class KeyOwner:
    """One place that defines keys, named for the help screen.

    Attributes:
        where: what the help's 'Where' column says ('everywhere', 'fields', 'Tune step').
        bindings: its bindings (only `Binding`s are listed; tuples are skipped).
    """

    where: str
    bindings: tuple[BindingType, ...]


def own_bindings(cls: type, base: type) -> list[Binding]:
    """The `BINDINGS` `cls` and its bases below `base` define themselves (not `base`'s own nor
    inherited from above it), in MRO order."""
    classes = [c for c in cls.__mro__ if issubclass(c, base) and c is not base]
    return [b for c in classes for b in vars(c).get("BINDINGS", []) if isinstance(b, Binding)]


def step_screen_owners(screens: Iterable[tuple[str, type]], base: type) -> list[KeyOwner]:
    """The keys each step's screen class adds to `base`'s (the step frame's), each binding
    once, named for the first step that has it ('Tune step'). `screens`: (step title, screen
    class) in step order."""
    seen: set[int] = set()
    found = []
    for title, cls in screens:
        bindings = [b for b in own_bindings(cls, base) if id(b) not in seen]
        seen |= {id(b) for b in bindings}
        if bindings:
            found.append(KeyOwner(f"{title} step", tuple(bindings)))
    return found


def bindings_of(owners: Sequence[KeyOwner]) -> list[tuple[str, list[Binding]]]:
    """Each owner's `Binding`s (tuples left out), with its name."""
    return [(o.where, [b for b in o.bindings if isinstance(b, Binding)]) for o in owners]


def binding_ids(owners: Sequence[KeyOwner]) -> list[str]:
    """Every binding id a keymap may remap."""
    return [b.id for _, owner in bindings_of(owners) for b in owner if b.id]


def key_display(app: WorkbenchApp, binding: Binding) -> str:
    """The key(s) a binding is on now (keymap applied), as shown to users."""
    keys = app._keymap.get(binding.id, binding.key) if binding.id else binding.key
    return " / ".join(app.get_key_display(Binding(k.strip(), "")) for k in keys.split(","))


def help_rows(app: WorkbenchApp, owners: Sequence[KeyOwner]) -> list[KeyRow]:
    """The help screen's table."""
    return [
        KeyRow(where, key_display(app, b), b.tooltip or b.description or b.action, b.id or "")
        for where, owner in bindings_of(owners)
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
