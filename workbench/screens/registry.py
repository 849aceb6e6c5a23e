"""The screen registry: the step list, as data. Adding a step is one `Step` entry in
`default_steps()`.

Each step names its screen factory and a done-predicate over the app's `Progress`. The app
builds its modes, the step list, the jump keys (1-9) and the palette entries from this list.
"""

from __future__ import annotations

from workbench.core.steps import Step, baseline_computed, has_candidates, left_behind, packet_done


def default_steps() -> tuple[Step, ...]:
    """The workbench's steps in order."""
    from workbench.review.state import matrix_done, proposal_done, release_done, signed_done
    from workbench.screens.baseline import BaselineScreen
    from workbench.screens.diagnose import DiagnoseScreen
    from workbench.screens.mapping import MappingScreen
    from workbench.screens.matrix import MatrixScreen
    from workbench.screens.packet import PacketScreen
    from workbench.screens.proposal import ProposalScreen
    from workbench.screens.release import ReleaseScreen
    from workbench.screens.review import ReviewScreen
    from workbench.screens.tune import TuneScreen

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
