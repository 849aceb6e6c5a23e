"""The screen registry: the step list, as data. Adding a step is one `Step` entry in
`default_steps()`.

Each step names its screen factory and a done-predicate over the app's `Progress`. The app
builds its modes, the step list, the jump keys (1-9) and the palette entries from this list.
Screens are named lazily (`LazyScreen`, one small loader each): start-up imports only the first
step's screen, and the app imports the others off the UI thread after the first frame
(`WorkbenchApp._load_screens`); a step asked for before then is imported on a thread of its own
and shown once it is (`WorkbenchApp._import_step`), so the UI thread never imports a step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.core.steps import (
    LazyScreen,
    Step,
    baseline_computed,
    has_candidates,
    left_behind,
    packet_done,
)

if TYPE_CHECKING:
    from textual.screen import Screen


def _packet() -> type[Screen]:
    from .packet import PacketScreen

    return PacketScreen


def _baseline() -> type[Screen]:
    from .baseline import BaselineScreen

    return BaselineScreen


def _diagnose() -> type[Screen]:
    from .diagnose import DiagnoseScreen

    return DiagnoseScreen


def _tune() -> type[Screen]:
    from .tune import TuneScreen

    return TuneScreen


def _mapping() -> type[Screen]:
    from .mapping import MappingScreen

    return MappingScreen


def _proposal() -> type[Screen]:
    from .proposal import ProposalScreen

    return ProposalScreen


def _matrix() -> type[Screen]:
    from .matrix import MatrixScreen

    return MatrixScreen


def _release() -> type[Screen]:
    from .release import ReleaseScreen

    return ReleaseScreen


def _review() -> type[Screen]:
    from .review import ReviewScreen

    return ReviewScreen


def default_steps() -> tuple[Step, ...]:
    """The workbench's steps in order."""
    from workbench.review.state import matrix_done, proposal_done, release_done, signed_done

    return (
        Step(
            "packet",
            "Packet",
            "Inputs every claim rests on: workload, SLA, precision, versions, hardware.",
            LazyScreen(_packet),
            packet_done,
        ),
        Step(
            "baseline",
            "Baseline",
            "The configuration every candidate is judged against, at load.",
            LazyScreen(_baseline),
            baseline_computed,
        ),
        Step(
            "diagnose",
            "Diagnose",
            "Which tail driver dominates: queueing, imbalance or fallback.",
            LazyScreen(_diagnose),
            baseline_computed,
        ),
        Step(
            "tune",
            "Tune",
            "Candidates against the baseline: fusion, tiles, batch policy.",
            LazyScreen(_tune),
            has_candidates,
        ),
        Step(
            "mapping",
            "Mapping",
            "Compiled shape buckets against the runtime shape mix.",
            LazyScreen(_mapping),
            left_behind("mapping"),
        ),
        Step(
            "proposal",
            "Proposal",
            "The baseline's bottleneck class, and the candidate proposed against every alternative.",
            LazyScreen(_proposal),
            proposal_done,
        ),
        Step(
            "validation",
            "Validation",
            "Loads x shape mixes x seeds for baseline and candidate; rollback triggers.",
            LazyScreen(_matrix),
            matrix_done,
        ),
        Step(
            "release",
            "Release",
            "Ship, ship-guarded or hold by the documented rule; an owner may override in writing.",
            LazyScreen(_release),
            release_done,
        ),
        Step(
            "review",
            "Review",
            "Review guards, owners' closure artifacts and signatures; sign and export.",
            LazyScreen(_review),
            signed_done,
        ),
    )
