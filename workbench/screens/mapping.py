"""The Mapping step (compiler-runtime topic): compile-time predictions against runtime behaviour,
per runtime shape and per compiled bucket (`workbench.mapping_view`).

The packet's own facts (buckets, padding by arithmetic) show at once; the chosen configuration
then runs through the model off the UI thread (debounced: a burst of edits runs once) and the
tables compare what the compiled plan predicts with what the run did: which bucket each shape
ran in, padding waste, fallback rate and batch time by shape.

The closed-loop mapping report (telemetry against these predictions, ranked retuning actions)
is `packets.mapping_report`, not in this build yet: `mapping_view.closed_loop_report()` finds it
when it lands, and `mapping_view.with_candidate` adds an action's candidate to the packet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from workbench.facts import mapping_facts
from workbench.review_render import bucket_view_table, shape_view_table
from workbench.review_state import loaded_from
from workbench.session import WorkingPacket
from workbench.widgets.fact_table import FactTable
from workbench.widgets.field_editor import ChoiceField
from workbench.widgets.note import Note

from .compute import ComputeScreen, form_field

if TYPE_CHECKING:  # mapping_view loads the model and polars: imported where used
    from workbench.mapping_view import BucketView, ShapeView

CONFIG = form_field("mapping", "configuration", "choice")


@dataclass(frozen=True)
class MappingRun:
    """What one run of the Mapping step shows."""

    key: str
    config: str
    requests: int
    seed: int
    shapes: ShapeView | None  # None when service times are pinned (no compiled plan)
    buckets: BucketView | None


def run_mapping(working: WorkingPacket, config: str, key: str) -> MappingRun:
    """Run `config` on the packet's workload and compare its compiled plan with the run."""
    from packets.runs import run_scenario
    from packets.scenario import build_scenario
    from workbench.mapping_view import bucket_view, shape_view

    loaded = loaded_from(working, b"")  # the model reads the packet, never its bytes
    scenario = build_scenario(loaded, None if config == "baseline" else config)
    runtime = scenario.runtime
    table = scenario.service_table
    if table is None:
        return MappingRun(key, config, runtime.workload.requests, runtime.seed, None, None)
    result = run_scenario(scenario, working.name).result
    mix = working.packet.inputs.workload.shapes.seq_len
    compiled = list(scenario.config.compiled_shapes.seq_len)
    return MappingRun(
        key,
        config,
        runtime.workload.requests,
        runtime.seed,
        shape_view(table, result, mix.values, mix.weights),
        bucket_view(table, result, compiled, mix.values, mix.weights),
    )


def run_key(working: WorkingPacket, config: str) -> str:
    """What a run depends on: the inputs fingerprint and the configuration's name."""
    from packets.review.common import inputs_sha256

    return f"{inputs_sha256(working.packet)}:{config}"


class MappingScreen(ComputeScreen):
    """Compiled shape buckets against the runtime shape mix, predicted and as run."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_mapping", "Run again", id="mapping-run"),
    ]

    def __init__(self, step: Any) -> None:
        super().__init__(step)
        self._shown_key = ""  # the run on screen (or being computed)

    def compose_main(self) -> ComposeResult:
        packet = self.workbench.working.packet
        configs = ("baseline", *(c.name for c in packet.candidates))
        with VerticalScroll(classes="review-scroll", can_focus=False):
            yield from self.compose_status()
            with Vertical(classes="review-form"):
                yield self.form_editor(
                    replace(CONFIG, choices=configs), "baseline", id="mapping-config"
                )
            yield FactTable(id="mapping-facts")
            yield Static(
                "Per runtime shape: compile time (c) against the run (r)", classes="section"
            )
            yield Static(id="mapping-shapes", classes="result")
            yield Static("Per compiled bucket", classes="section")
            yield Static(id="mapping-buckets", classes="result")
            yield Static("Closed-loop mapping report", classes="section")
            yield Note(id="mapping-report", classes="hint")

    def show_outputs(self, working: WorkingPacket) -> None:
        from workbench.mapping_view import closed_loop_report

        packet = working.packet
        editor = self.query_one("#mapping-config", ChoiceField)
        configs = ("baseline", *(c.name for c in packet.candidates))
        if configs != editor.spec.choices:
            self.set_choices(editor, configs, self.form.get("configuration"))
        self.query_one("#mapping-facts", FactTable).show(mapping_facts(packet))
        self.say(
            "mapping-report",
            "available: telemetry import and ranked actions come from packets.mapping_report"
            if closed_loop_report() is not None
            else "Not in this build yet (workbench report, packets.mapping_report): the tables "
            "above come from the model alone, without telemetry.",
        )
        self._request_run(debounce=True)

    def form_committed(self, name: str, value: object) -> None:
        if name == "configuration":
            self._request_run(debounce=True)

    def action_run_mapping(self) -> None:
        """Run the chosen configuration again and refresh the tables."""
        self._shown_key = ""
        self._request_run(debounce=False)

    def _request_run(self, *, debounce: bool) -> None:
        working = self.workbench.working
        config = self.form.get("configuration") or "baseline"
        key = run_key(working, config)
        if key == self._shown_key:
            return  # already on screen, or being computed
        if self._shown_key:
            self.say(
                "status",
                f"{config}: the inputs or the configuration changed: running again",
                "stale",
            )
        self._shown_key = key
        self.start_compute(
            f"Running {config} through the model",
            lambda stop: run_mapping(working, config, key),
            self._show_run,
            debounce=debounce,
        )

    def _show_run(self, run: MappingRun) -> None:
        compact = self.has_class("-compact")
        if run.shapes is None or run.buckets is None:
            self.say(
                "status",
                f"{run.config}: service times are pinned to a distribution: no compiled plan to "
                "compare with",
                "missing",
            )
            return
        v = run.shapes
        self.say(
            "status",
            f"{run.config}, {run.requests:,} requests, seed {run.seed}: fallback "
            f"{v.runtime_fallback_rate:.1%} run ({v.predicted_fallback_share:.1%} predicted); "
            f"padding {v.runtime_padding_mean:.1%} run ({v.predicted_padding_mean:.1%} predicted)",
            "current",
        )
        self.query_one("#mapping-facts", FactTable).display = False
        self.query_one("#mapping-shapes", Static).update(shape_view_table(v, compact=compact))
        self.query_one("#mapping-buckets", Static).update(bucket_view_table(run.buckets))
