"""The Mapping step (compiler-runtime topic): compile-time predictions against runtime behaviour,
per runtime shape and per compiled bucket (`workbench.mapping.view`).

The packet's own facts (buckets, padding by arithmetic) show at once; the chosen configuration
then runs through the model off the UI thread (debounced: a burst of edits runs once) and the
tables compare what the compiled plan predicts with what the run did: which bucket each shape
ran in, padding waste, fallback rate and batch time by shape.

ctrl+y runs the closed-loop mapping report (`triage.mapping.report.report`, what `workbench
report` prints) on the telemetry files named in the form (kernel and request telemetry, Chrome
traces; none: the model alone): compile-time accuracy, calibration, observed against simulated,
the runtime adaptation gain against its cost, and the retuning actions ranked by p99 gain per
compile second. ctrl+l applies the numbered action as a new candidate in the packet
(`action_to_candidate`, then an edit like any other).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from workbench.core.facts import mapping_facts
from workbench.core.session import WorkingPacket
from workbench.mapping.render import bucket_view_table, mapping_report_view, shape_view_table
from workbench.review.state import loaded_from
from workbench.widgets.fact_table import FactTable
from workbench.widgets.field_editor import ChoiceField, FieldEditor
from workbench.widgets.note import Note

from .compute import ComputeScreen, form_field, one_line

if TYPE_CHECKING:  # mapping_view loads the model and polars: imported where used
    from workbench.mapping.view import BucketView, ShapeView

CONFIG = form_field("mapping", "configuration", "choice")
TELEMETRY = form_field("mapping", "telemetry", "text", optional=True)
ACTION = form_field("mapping", "action", "integer", ge=1, le=1)  # le: the report's action count


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
    from triage.runs import run_scenario
    from triage.scenario import build_scenario
    from workbench.mapping.view import bucket_view, shape_view

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


def telemetry_paths(text: str | None) -> list[str]:
    """Telemetry files typed in one field, separated by commas."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def report_key(working: WorkingPacket, config: str) -> str:
    """What a mapping report depends on in the packet: the inputs, the seed and the resolved
    configuration (adding a candidate, as applying an action does, leaves it current)."""
    import hashlib
    import json

    from packets.candidates import resolve_config

    packet = working.packet
    basis = {
        "inputs": packet.inputs.model_dump(mode="json"),
        "seed": packet.seed,
        "config": resolve_config(packet, config).model_dump(mode="json"),
    }
    text = json.dumps(basis, sort_keys=True, separators=(",", ":"))
    return f"{hashlib.sha256(text.encode()).hexdigest()}:{config}"


def run_report(working: WorkingPacket, config: str, paths: list[str]) -> dict:
    """The closed-loop mapping report for `config` on the telemetry files `paths`."""
    import shlex

    from triage.mapping.report import report

    command = ["workbench", "report", working.name]
    command += ["--telemetry", *paths] if paths else []
    command += [] if config == "baseline" else ["--candidate", config]
    return report(
        loaded_from(working, b""),  # the model reads the packet, never its bytes
        paths,
        candidate=None if config == "baseline" else config,
        command=shlex.join(command),
    )


def run_key(working: WorkingPacket, config: str) -> str:
    """What a run depends on: the inputs fingerprint and the configuration's name."""
    from packets.fingerprint import inputs_sha256

    return f"{inputs_sha256(working.packet)}:{config}"


class MappingScreen(ComputeScreen):
    """Compiled shape buckets against the runtime shape mix, predicted and as run."""

    LOADS_MODEL: ClassVar[bool] = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_mapping", "Run again", id="mapping-run"),
        Binding(
            "ctrl+y", "mapping_report", "Report", id="mapping-report", tooltip="Mapping report"
        ),
        Binding("ctrl+l", "apply_action", "Apply", id="apply-action", tooltip="Apply action"),
    ]

    def __init__(self, step: Any) -> None:
        super().__init__(step)
        self._shown_key = ""  # the run on screen (or being computed)
        self.report: tuple[str, dict] | None = None
        """The last mapping report and the report_key it was computed for."""

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
            yield Static(
                "Closed-loop mapping report (ctrl+y; ctrl+l applies an action)", classes="section"
            )
            with Vertical(classes="review-form"):
                yield self.form_editor(TELEMETRY, None, id="mapping-telemetry")
            yield Note(id="report-status", classes="hint")
            yield Static(id="report", classes="result")
            with Vertical(classes="review-form"):
                yield self.form_editor(ACTION, 1, id="mapping-action")
                yield Note(id="action-problem", classes="action-problem")

    def show_outputs(self, working: WorkingPacket) -> None:
        packet = working.packet
        editor = self.query_one("#mapping-config", ChoiceField)
        configs = ("baseline", *(c.name for c in packet.candidates))
        if configs != editor.spec.choices:
            self.set_choices(editor, configs, self.form.get("configuration"))
        self.query_one("#mapping-facts", FactTable).show(mapping_facts(packet))
        self._show_report_state()
        self._request_run(debounce=True)

    def _report_key(self) -> str:
        """What the report would be computed from now: the packet's part, the configuration
        and the telemetry files named."""
        config = self.form.get("configuration") or "baseline"
        paths = telemetry_paths(self.form.get("telemetry"))
        return f"{report_key(self.workbench.working, config)}:{','.join(paths)}"

    def _report_current(self) -> bool:
        return self.report is not None and self.report[0] == self._report_key()

    def _clear_report(self) -> None:
        """Take a report off the screen (its inputs changed, or a new one failed)."""
        self.report = None
        self.query_one("#report", Static).update("")

    def _show_report_state(self, failure: str = "") -> None:
        if failure:
            text = f"No report: {failure}"
        elif self.report is not None and not self._report_current():
            self._clear_report()
            text = "Cleared: the inputs, configuration or telemetry changed (ctrl+y runs it again)."
        elif self.report is None:
            text = "No report yet: name telemetry files (comma-separated; none: the model alone)."
        else:
            report = self.report[1]
            text = f"{report['candidate']}, shape mix from {report['shape_mix']['source']}: "
            text += f"reproduce with {report['command']}"
        self.say("report-status", text)

    def form_committed(self, name: str, value: object) -> None:
        if name == "configuration":
            self._show_report_state()
            self._request_run(debounce=True)
        elif name == "telemetry":
            self._show_report_state()

    def action_mapping_report(self) -> None:
        """Run the closed-loop mapping report on the telemetry named (off the UI thread)."""
        working = self.workbench.working
        config = self.form.get("configuration") or "baseline"
        paths = telemetry_paths(self.form.get("telemetry"))
        key = self._report_key()
        self._clear_report()  # a report is shown only for the inputs it was computed from
        self.say("report-status", "Computing the report…")
        self.start_compute(
            "Mapping report: accuracy, calibration, adaptation, actions",
            lambda stop: (key, run_report(working, config, paths)),
            self._show_report,
            failed=self._report_failed,
            channel="report",
        )

    def _report_failed(self, exc: BaseException) -> None:
        text = f"mapping report not computed: {one_line(exc)}"
        self._show_report_state(text)
        self.tell(text, "error")

    def _show_report(self, result: tuple[str, dict]) -> None:
        self.report = result
        report = result[1]
        compact = self.has_class("-compact")
        self.query_one("#report", Static).update(mapping_report_view(report, compact=compact))
        action = self.query_one("#mapping-action", FieldEditor)
        count = max(1, len(report["actions"]))
        action.spec = replace(action.spec, le=count)
        if (self.form.get("action") or 1) > count:
            self.form["action"] = 1
            action.show_value(1)
        self.say("action-problem", "")
        self._show_report_state()

    def action_apply_action(self) -> None:
        """Add the numbered action of the report to the packet as a new candidate."""
        from triage.mapping.report import action_to_candidate
        from workbench.mapping.view import with_candidate

        if self.report is None or not self._report_current():
            self.say("action-problem", "no current report: ctrl+y runs it first")
            return
        rank = int(self.form.get("action") or 1)
        action = next((a for a in self.report[1]["actions"] if a["rank"] == rank), None)
        if action is None:
            self.say("action-problem", f"the report has no action {rank}")
            return
        working = self.workbench.working
        try:
            overrides = action_to_candidate(working.packet, action)
        except ValueError as exc:
            self.say("action-problem", str(exc))
            return
        result = with_candidate(working, overrides)
        if not isinstance(result, WorkingPacket):
            self.say("action-problem", f"not added: {result.message}")
            return
        self.say("action-problem", "")
        self.workbench.working = result
        self.tell(f"Candidate {overrides['name']} added from action {action['id']}: unsaved")

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
