"""The step types: `Step`, the `Progress` its done-predicate looks at, and the shared
done-predicates.

The list of steps itself (which screen each step opens) is the screen registry,
`workbench/screens/registry.py`; keeping it apart lets screens and done-predicates import these
types without importing every screen. A step names its screen with a `LazyScreen`, so start-up
imports only the screens it shows (the other steps' modules load after the first frame).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.core.session import WorkingPacket

if TYPE_CHECKING:
    from textual.screen import Screen

    from workbench.lab.engine import Lab


@dataclass(frozen=True)
class Progress:
    """What done-predicates may look at.

    Attributes:
        working: the packet under edit.
        left: ids of the steps the user has been through and moved on from.
        lab: the app's cached model results (None: nothing computed yet).
    """

    working: WorkingPacket
    left: frozenset[str]
    lab: Lab | None = None


@dataclass(frozen=True)
class Step:
    """One step of the workflow.

    Attributes:
        id: stable identifier (mode name, binding ids `goto-<id>`); lowercase, no spaces.
        title: shown in the step list and as the screen's heading.
        purpose: one line under the heading saying what the step is for.
        screen: builds the step's screen (called once, the first time the step is opened).
        done: True when the step counts as done (a check mark in the step list).
    """

    id: str
    title: str
    purpose: str
    screen: Callable[[Step], Screen]
    done: Callable[[Progress], bool]


_IMPORTED: set[Callable[[], type[Screen]]] = set()
"""Loaders whose screen class and first-use imports (`import_screen`) are loaded in this
process: a record of the interpreter's own, process-wide, module table, added to from any
thread."""


@dataclass(frozen=True)
class LazyScreen:
    """A step's screen factory whose class is imported on first use.

    Attributes:
        load: returns the screen class (importing its module the first time).
    """

    load: Callable[[], type[Screen]]

    def __call__(self, step: Step) -> Screen:
        return self.load()(step)  # type: ignore[call-arg]


def screen_class(step: Step) -> type[Screen] | None:
    """The class of a step's screen (importing it when lazy); None for a factory that is
    neither a class nor a `LazyScreen`."""
    factory = step.screen
    if isinstance(factory, LazyScreen):
        return factory.load()
    return factory if isinstance(factory, type) else None


def import_screen(step: Step) -> None:
    """Import the step's screen class and the modules it imports on first use (its
    `preload`, a StepScreen's), so that showing it imports nothing more (`screen_imported`)."""
    cls = screen_class(step)
    preload = getattr(cls, "preload", None)
    if preload is not None:
        preload()
    if isinstance(step.screen, LazyScreen):
        _IMPORTED.add(step.screen.load)


def screen_imported(step: Step) -> bool:
    """Showing the step's screen imports nothing: `import_screen` has run for it in this
    process (a factory that is not a `LazyScreen` counts as imported)."""
    factory = step.screen
    return factory.load in _IMPORTED if isinstance(factory, LazyScreen) else True


def packet_done(progress: Progress) -> bool:
    """The Packet step is done once left with no refused text in any field."""
    return "packet" in progress.left and not progress.working.pending


def left_behind(step_id: str) -> Callable[[Progress], bool]:
    """Done once the user has been through the step and moved on (steps whose results are
    not computed yet have nothing else to check)."""

    def done(progress: Progress) -> bool:
        return step_id in progress.left

    return done


def baseline_computed(progress: Progress) -> bool:
    """Done once the baseline run (with its diagnosis) is computed for the current inputs."""
    return progress.lab is not None and progress.lab.has_baseline(progress.working)


def has_candidates(progress: Progress) -> bool:
    """Done once the packet holds at least one candidate."""
    return bool(progress.working.packet.candidates)
