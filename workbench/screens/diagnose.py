"""The Diagnose step: the bottleneck classification with its evidence, the three debug branches
as a checklist (tail first, fairness across cores, fusion against memory), and charts of the
tail-latency drivers, the queue-wait profile, per-core utilization and HBM demand."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from packets.schema import Packet
from workbench.core.session import WorkingPacket
from workbench.lab.engine import LabRun, subject
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

    @property
    def deck(self) -> ChartDeck:
        """The chart views."""
        from workbench.widgets.chart_deck import ChartDeck

        return self.query_one(ChartDeck)

    def action_chart(self, offset: int) -> None:
        """Show the next (or previous) chart."""
        self.deck.step(offset)

    def show_packet(self, working: WorkingPacket) -> None:
        wanted, lab = subject(working), self.lab
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
