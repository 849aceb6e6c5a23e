"""The Baseline step: the explicit baseline run with its seed, tail first, the SLA verdict, and
the pipeline compile plan -> runtime queue -> core placement -> completion with its figures.

A serving packet (`batch_policy.scheduler: continuous`) shows its serving run instead, the
same run as `workbench run`: TTFT, TPOT and latency tails, tokens/s, preemptions, the SLA
verdict per target, and the KV-cache occupancy over time."""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, VerticalScroll
from textual.widgets import Static

from packets.schema import Packet
from workbench.core.facts import baseline_facts
from workbench.core.session import WorkingPacket
from workbench.lab.engine import LabRun, ServingRun, is_serving, subject
from workbench.lab.views import (
    pipeline,
    serving_tails,
    serving_throughput,
    serving_verdicts,
    sla_verdicts,
    tail_first,
)
from workbench.widgets.charts import Chart
from workbench.widgets.fact_table import FactTable

from .lab_screen import LabScreen

STAGES = ("compile plan", "runtime queue", "core placement", "completion")


def verdict_mark(ok: bool | None) -> Text:
    """✓ / ✗ / – for an SLA check that holds, fails, or has no target."""
    if ok is None:
        return Text("–", style="dim")
    return Text("✓", style="bold green") if ok else Text("✗", style="bold red")


def run_heading(run: LabRun | ServingRun, packet: Packet, packet_file: str) -> Text:
    """What was run: seed, requests, warm-up, and the command that reproduces it (run from the
    packet's folder)."""
    s = run.summary
    workload = packet.inputs.workload
    file = Path(packet_file).name
    command = shlex.join(
        ["workbench", "run", file, "--seed", str(s["seed"]), "--requests", str(s["requests"])]
    )
    return Text.assemble(
        ("Baseline run", "bold"),
        f" · seed {s['seed']} · {s['requests']:,} requests ({workload.warmup_fraction:.0%} "
        f"warm-up dropped)\n",
        ("reproduce: ", "dim"),
        command,
    )


def tail_table(run: LabRun, packet: Packet) -> Table:
    """Latency tail first, then the SLA verdict per target."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    lat = dict(tail_first(run.summary))
    table.add_row("Latency", f"p99 {lat['p99']}", f"p95 {lat['p95']}", f"p50 {lat['p50']}")
    table.add_row("", f"mean {lat['mean']}", f"max {lat['max']}", "")
    for verdict in sla_verdicts(run.summary, packet):
        table.add_row(
            "SLA" if verdict.label == "p99" else "",
            Text.assemble(verdict_mark(verdict.ok), f" {verdict.label} {verdict.value}"),
            Text(verdict.target, style="dim"),
            "",
        )
    return table


def serving_table(run: ServingRun, packet: Packet) -> Group:
    """A serving run: TTFT, TPOT and latency tails first (p99, p95, p50), the SLA verdict per
    target, then tokens/s and preemptions."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    for _ in range(3):
        table.add_column(no_wrap=True)
    for label, (p99, p95, p50) in serving_tails(run.summary):
        table.add_row(label, f"p99 {p99}", f"p95 {p95}", f"p50 {p50}")
    verdicts = [  # the values are the tails above: each target with its verdict
        Text.assemble(verdict_mark(v.ok), f" {v.label} ", (v.target, "dim"))
        for v in serving_verdicts(run.summary, packet)
    ]
    return Group(
        table,
        Text.assemble(("SLA      ", "bold"), verdicts[0], " · ", verdicts[1]),
        Text.assemble("         ", verdicts[2], " · ", verdicts[3]),
        Text.assemble(("Serving  ", "bold"), serving_throughput(run.summary)),
    )


class BaselineScreen(LabScreen):
    """The baseline run (computed once per inputs, shared with Diagnose and Tune)."""

    def compose_main(self) -> ComposeResult:
        yield from self.compose_status()
        with VerticalScroll(id="baseline-body"):  # focusable: arrows scroll it at 80x24
            yield Static("Running the baseline…", id="baseline-run")
            yield Static(id="baseline-tail")
            yield Chart("waiting for the model…", id="baseline-kv")  # serving packets only
            with Grid(id="pipeline"):
                for number, name in enumerate(STAGES, start=1):
                    stage = Static(id=f"stage-{number}", classes="stage")
                    stage.border_title = f"{number} {name}" + (" ▸" if number < 4 else "")
                    yield stage
            yield Static("Inputs", classes="section")
            yield FactTable(id="facts")

    def show_packet(self, working: WorkingPacket) -> None:
        self.query_one(FactTable).show(baseline_facts(working.packet))
        wanted, lab = subject(working), self.lab
        serving = is_serving(wanted)
        self.set_class(serving, "-serving")
        if serving:
            self.forget("baseline")  # a dynamic-batcher run on its way is not shown
            if self.show_or_compute(
                "baseline-serving",
                lab.cached_serving_run(wanted),
                lambda: lab.serving_run(wanted),
                self.show_serving_run,
            ):
                self.query_one("#baseline-run", Static).update("Running the baseline…")
            return
        self.forget("baseline-serving")
        if self.show_or_compute(
            "baseline", lab.cached_run(wanted), lambda: lab.run(wanted), self.show_run
        ):
            self.query_one("#baseline-run", Static).update("Running the baseline…")

    def show_run(self, run: LabRun) -> None:
        """Show a baseline run."""
        packet = self.workbench.working.packet
        heading = run_heading(run, packet, self.workbench.working.name)
        self.query_one("#baseline-run", Static).update(heading)
        self.query_one("#baseline-tail", Static).update(tail_table(run, packet))
        stages = pipeline(run, packet, packet.baseline.placement)
        for number, stage in enumerate(stages, start=1):
            self.query_one(f"#stage-{number}", Static).update("\n".join(stage.figures))
        self.refresh_steps()

    def show_serving_run(self, run: ServingRun) -> None:
        """Show a serving packet's baseline run and its KV-cache chart."""
        from workbench.lab.charts import kv_chart

        packet = self.workbench.working.packet
        heading = run_heading(run, packet, self.workbench.working.name)
        self.query_one("#baseline-run", Static).update(heading)
        self.query_one("#baseline-tail", Static).update(serving_table(run, packet))
        self.query_one("#baseline-kv", Chart).show(kv_chart([("baseline", run)]))
        self.refresh_steps()
