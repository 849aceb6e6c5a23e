"""The Diagnose step: the bottleneck classification with its evidence, the three debug branches
as a checklist (tail first, fairness across cores, fusion against memory), and charts of the
tail-latency drivers, the queue-wait profile, per-core utilization and HBM demand.

A serving packet (continuous batching) shows its serving tail instead: TTFT, TPOT and latency
p99/p95 against the SLA, the Shapley attribution of each p99 over the serving drivers, the
serving bottleneck class with its evidence, and charts of the drivers, the slowest requests'
latency parts and the KV cache (workbench/lab/serving_diagnosis.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from packets.schema import Packet
from workbench.core.session import WorkingPacket
from workbench.lab.engine import LabRun, ServingRun, is_serving, subject
from workbench.lab.views import checklist

from .lab_screen import LabScreen

if TYPE_CHECKING:
    from workbench.widgets.chart_deck import ChartDeck

VIEWS = (
    ("chart-drivers", "Tail drivers"),
    ("chart-wait", "Queue wait"),
    ("chart-cores", "Cores"),
    ("chart-hbm", "HBM demand"),
)
SERVING_VIEWS = (
    ("chart-serving-drivers", "Tail drivers"),
    ("chart-serving-parts", "Tail parts"),
    ("chart-serving-kv", "KV cache"),
)


def classification_text(run: LabRun) -> Text:
    """Primary class with its score and evidence, then the secondary classes."""
    cls = run.summary["classification"]
    primary = cls["primary"]
    evidence = ", ".join(
        f"{k} {v:g}" for k, v in primary["evidence"].items() if k != "p99_tail_score"
    )
    secondary = ", ".join(f"{s['class']} ({s['value']:.2f})" for s in cls["secondary"]) or "none"
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("Bottleneck: ", style="bold")
    text.append(primary["class"], style="bold")
    text.append(f" · p99-tail score {primary['value']:.2f} · secondary: {secondary}\n")
    text.append(f"evidence: {evidence}", style="dim")
    return text


def checklist_text(run: LabRun, packet: Packet) -> Text:
    """The three debug branches, one line each with its finding under it."""
    branches = checklist(run.summary, packet)
    text = Text(no_wrap=True, overflow="ellipsis")
    for number, branch in enumerate(branches, start=1):
        mark, colour = ("✓", "green") if branch.clear else ("✗", "red")
        text.append(f"{mark} ", style=f"bold {colour}")
        text.append(f"{number} {branch.title}\n", style="bold")
        text.append(f"  {branch.finding}" + ("\n" if number < len(branches) else ""))
    return text


def serving_classification_text(run: ServingRun, packet: Packet) -> Text:
    """The serving tail against the SLA (TTFT, TPOT, latency: p99 then p95, each with its
    target), then the bottleneck class with its score and secondaries."""
    from workbench.lab.serving_diagnosis import tail_lines

    text = Text(no_wrap=True, overflow="ellipsis")
    for label, cells in tail_lines(run.summary, packet):
        text.append(f"{label:<8}", style="bold")
        for index, cell in enumerate(cells):
            text.append((" · " if index else "") + f"{cell.percentile} {cell.value}")
            if cell.ok is not None:
                mark, colour = ("✓", "green") if cell.ok else ("✗", "red")
                text.append(f" {mark}", style=f"bold {colour}")
                text.append(f" {cell.target}")
        text.append("\n")
    cls = run.summary.get("classification")
    if cls is None:  # a summary without attribution (never what Diagnose asks for)
        text.append("Bottleneck: not classified", style="bold")
        return text
    primary = cls["primary"]
    secondary = ", ".join(f"{s['class']} ({s['value']:.2f})" for s in cls["secondary"]) or "none"
    text.append("Bottleneck: ", style="bold")
    text.append(primary["class"], style="bold")
    text.append(f" · p99-tail score {primary['value']:.2f} · secondary: {secondary}")
    return text


def serving_attribution_text(run: ServingRun) -> Text:
    """The Shapley split of latency, TTFT and TPOT p99 over the active serving drivers, then
    the primary class's evidence."""
    from triage.units import ms
    from workbench.lab.serving_diagnosis import attribution_lines, evidence_text

    counterfactual = run.summary["tail_attribution_ms"].get("counterfactual")
    text = Text(no_wrap=True, overflow="ellipsis")
    if counterfactual is None:
        return text
    drivers, runs = len(counterfactual["drivers"]), counterfactual["runs"]
    text.append("p99 drop if switched off", style="bold")
    text.append(f" · Shapley, {drivers} drivers, {runs} re-runs\n")
    for line in attribution_lines(run.summary):
        drops = " · ".join(f"{name} {ms(drop)}" for name, drop in line.drops_ms)
        text.append(f"{line.label:<8}", style="bold")
        text.append(f"{ms(line.p99_ms)} → {ms(line.all_off_ms)} all off")
        text.append((f": {drops}" if drops else ": no driver can act") + "\n")
    cls = run.summary.get("classification")
    if cls is not None:
        text.append(f"evidence: {evidence_text(cls['primary'])}", style="dim")
    return text


class DiagnoseScreen(LabScreen):
    """Diagnosis of the baseline run (the same cached run the Baseline step shows)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "chart(1)", "Chart", id="next-chart", priority=True, tooltip="Next chart"),
        Binding(
            "f3", "chart(-1)", "Previous chart", id="previous-chart", priority=True, show=False
        ),
    ]

    def compose_main(self) -> ComposeResult:
        from workbench.widgets.chart_deck import ChartDeck
        from workbench.widgets.charts import Chart

        yield from self.compose_status()
        with VerticalScroll(id="diagnose-text", can_focus=False):
            yield Static("Running the baseline…", id="diagnose-class")
            yield Static(id="diagnose-checklist")
        waiting = "waiting for the model…"
        views = [(view_id, name, Chart(waiting, id=view_id)) for view_id, name in VIEWS]
        yield ChartDeck(views, "f2/f3", id="diagnose-deck")
        views = [(view_id, name, Chart(waiting, id=view_id)) for view_id, name in SERVING_VIEWS]
        yield ChartDeck(views, "f2/f3", id="diagnose-serving-deck")  # serving packets only

    @property
    def deck(self) -> ChartDeck:
        """The chart views on screen (a serving packet's own deck for a serving packet)."""
        from workbench.widgets.chart_deck import ChartDeck

        serving = self.has_class("-serving")
        return self.query_one("#diagnose-serving-deck" if serving else "#diagnose-deck", ChartDeck)

    def action_chart(self, offset: int) -> None:
        """Show the next (or previous) chart."""
        self.deck.step(offset)

    def show_packet(self, working: WorkingPacket) -> None:
        wanted, lab = subject(working), self.lab
        serving = is_serving(wanted)
        self.set_class(serving, "-serving")
        if serving:
            self.forget("baseline")  # a dynamic-batcher run on its way is not shown
            if self.show_or_compute(
                "diagnosis-serving",
                lab.cached_serving_diagnosis(wanted),
                lambda: lab.serving_diagnosis(wanted),
                self.show_serving_run,
            ):
                self.query_one("#diagnose-class", Static).update("Running the baseline…")
                self.query_one("#diagnose-checklist", Static).update("")
            return
        self.forget("diagnosis-serving")
        if self.show_or_compute(
            "baseline", lab.cached_run(wanted), lambda: lab.run(wanted), self.show_run
        ):
            self.query_one("#diagnose-class", Static).update("Running the baseline…")

    def show_run(self, run: LabRun) -> None:
        """Show the diagnosis of a baseline run."""
        from workbench.lab.charts import core_chart, driver_chart, hbm_chart, wait_chart
        from workbench.widgets.charts import Chart

        packet = self.workbench.working.packet
        self.query_one("#diagnose-class", Static).update(classification_text(run))
        self.query_one("#diagnose-checklist", Static).update(checklist_text(run, packet))
        for view_id, data in (
            ("chart-drivers", driver_chart(run)),
            ("chart-wait", wait_chart(run)),
            ("chart-cores", core_chart(run)),
            ("chart-hbm", hbm_chart([("baseline", run)])),
        ):
            self.query_one(f"#{view_id}", Chart).show(data)
        self.refresh_steps()

    def show_serving_run(self, run: ServingRun) -> None:
        """Show the diagnosis of a serving packet's baseline: its tail, attribution, class."""
        from workbench.lab.charts import kv_chart
        from workbench.lab.serving_diagnosis import serving_driver_chart, serving_parts_chart
        from workbench.widgets.charts import Chart

        packet = self.workbench.working.packet
        text = serving_classification_text(run, packet)
        self.query_one("#diagnose-class", Static).update(text)
        self.query_one("#diagnose-checklist", Static).update(serving_attribution_text(run))
        for view_id, data in (
            ("chart-serving-drivers", serving_driver_chart(run)),
            ("chart-serving-parts", serving_parts_chart(run)),
            ("chart-serving-kv", kv_chart([("baseline", run)])),
        ):
            self.query_one(f"#{view_id}", Chart).show(data)
        self.refresh_steps()
