"""The step list, as data: adding a step is one `Step` entry in `default_steps()`.

Each step names its screen factory and a done-predicate over the app's `Progress`. The app
builds its modes, the step list, the jump keys (1-9) and the palette entries from this list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .session import WorkingPacket

if TYPE_CHECKING:
    from textual.screen import Screen

    from .lab import Lab


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


def default_steps() -> tuple[Step, ...]:
    """The workbench's steps in order."""
    from .review_state import matrix_done, proposal_done, release_done, signed_done
    from .screens.baseline import BaselineScreen
    from .screens.diagnose import DiagnoseScreen
    from .screens.mapping import MappingScreen
    from .screens.matrix import MatrixScreen
    from .screens.packet import PacketScreen
    from .screens.proposal import ProposalScreen
    from .screens.release import ReleaseScreen
    from .screens.review import ReviewScreen
    from .screens.tune import TuneScreen

    return (
        Step(
            "packet",
            "Packet",
            "Inputs every claim rests on: workload, SLA, precision, versions, hardware.",
            PacketScreen,
            packet_done,
        ),
        Step(
            "baseline",
            "Baseline",
            "The configuration every candidate is judged against, at load.",
            BaselineScreen,
            baseline_computed,
        ),
        Step(
            "diagnose",
            "Diagnose",
            "Which tail driver dominates: queueing, imbalance or fallback.",
            DiagnoseScreen,
            baseline_computed,
        ),
        Step(
            "tune",
            "Tune",
            "Candidates against the baseline: fusion, tiles, batch policy.",
            TuneScreen,
            has_candidates,
        ),
        Step(
            "mapping",
            "Mapping",
            "Compiled shape buckets against the runtime shape mix.",
            MappingScreen,
            left_behind("mapping"),
        ),
        Step(
            "proposal",
            "Proposal",
            "The baseline's bottleneck class, and the candidate proposed against every alternative.",
            ProposalScreen,
            proposal_done,
        ),
        Step(
            "validation",
            "Validation",
            "Loads x shape mixes x seeds for baseline and candidate; rollback triggers.",
            MatrixScreen,
            matrix_done,
        ),
        Step(
            "release",
            "Release",
            "Ship, ship-guarded or hold by the documented rule; an owner may override in writing.",
            ReleaseScreen,
            release_done,
        ),
        Step(
            "review",
            "Review",
            "Review guards, owners' closure artifacts and signatures; sign and export.",
            ReviewScreen,
            signed_done,
        ),
    )
