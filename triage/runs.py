"""Running a packet configuration through the model: what `workbench run` and the app call."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.runtime.simulate import RuntimeResult, simulate
from model.runtime.summary import RunReport, run_summary, summarize
from triage.scenario import Scenario, build_scenario

if TYPE_CHECKING:
    from model.runtime.serving import ServingResult
    from packets.load import LoadedPacket


@dataclass(frozen=True)
class ServingReport:
    """A serving (continuous-batching) run: its JSON contract and the result behind it.

    Attributes:
        summary: the `workbench run --json` contract (model/runtime/serving_summary.py, with
            `packet` and `candidate` first).
        result: the simulation (per-request and per-iteration arrays).
    """

    summary: dict
    result: ServingResult

    @property
    def classification(self) -> dict | None:
        """The serving bottleneck class with its evidence (None: run without attribution)."""
        return self.summary.get("classification")

    @property
    def counterfactual(self) -> dict | None:
        """The Shapley tail attribution over the serving drivers (None: run without it)."""
        return self.summary["tail_attribution_ms"].get("counterfactual")


def reproduce_command(path: str, scenario: Scenario) -> str:
    """The exact command line that reproduces a scenario's run."""
    parts = ["workbench", "run", path]
    if scenario.candidate != "baseline":
        parts += ["--candidate", scenario.candidate]
    parts += ["--seed", str(scenario.runtime.seed)]
    parts += ["--requests", str(scenario.runtime.workload.requests)]
    return shlex.join(parts)


def simulate_scenario(scenario: Scenario) -> RuntimeResult:
    """Simulate a scenario (the first half of `run_scenario`: enough for latency charts)."""
    return simulate(
        scenario.runtime, scenario.service_table, all_compiled_table=scenario.all_compiled_table
    )


def summarize_scenario(scenario: Scenario, path: str, result: RuntimeResult) -> RunReport:
    """Summarize a scenario's simulation (the second half of `run_scenario`: the tail
    attribution's counterfactual re-runs and the classification)."""
    run = summarize(
        result,
        scenario.service_table,
        all_compiled_table=scenario.all_compiled_table,
        command=reproduce_command(path, scenario),
    )
    named = dataclasses.replace(run, packet=scenario.packet.id, candidate=scenario.candidate)
    return RunReport(run=named, result=result)


def run_scenario(scenario: Scenario, path: str) -> RunReport:
    """Simulate a scenario; the summary carries `packet` and `candidate` first (JSON contract).
    The dynamic batcher, also for a serving packet (its decode step): see `run_serving_scenario`.
    The same bits as `summarize_scenario` after `simulate_scenario`, sooner: the tail
    attribution's re-runs start beside the simulation (`model.runtime.summary.run_summary`)."""
    report = run_summary(
        scenario.runtime,
        scenario.service_table,
        all_compiled_table=scenario.all_compiled_table,
        command=reproduce_command(path, scenario),
    )
    named = dataclasses.replace(report.run, packet=scenario.packet.id, candidate=scenario.candidate)
    return RunReport(run=named, result=report.result)


def run_serving_scenario(
    scenario: Scenario, path: str, *, attribution: bool = False
) -> ServingReport:
    """Run a serving scenario's continuous scheduler (triage/serving_scenario.py). attribution:
    add the Shapley tail attribution and the bottleneck class (2^k kernel re-runs for k active
    drivers, at most 16; `workbench run` and Diagnose); without, the composition only (what
    the Baseline and Tune steps show on every edit)."""
    from triage.serving_scenario import all_compiled_iteration_table, run_serving

    command = reproduce_command(path, scenario)

    def all_compiled():
        return all_compiled_iteration_table(
            scenario.config, scenario.serving, scenario.hardware, scenario.block
        )

    summary, result = run_serving(
        scenario.serving,
        scenario.iteration_table,
        command,
        all_compiled=all_compiled if attribution else None,
    )
    head = {"packet": scenario.packet.id, "candidate": scenario.candidate}
    return ServingReport(summary={**head, **summary}, result=result)


def run_packet(
    loaded: LoadedPacket,
    candidate: str | None = None,
    *,
    seed: int | None = None,
    requests: int | None = None,
) -> RunReport | ServingReport:
    """Build and run one configuration of a loaded packet (serving packets: the continuous
    scheduler with its tail attribution and bottleneck class; `workbench run`)."""
    scenario = build_scenario(loaded, candidate, seed=seed, requests=requests)
    if scenario.is_serving:
        return run_serving_scenario(scenario, loaded.name, attribution=True)
    return run_scenario(scenario, loaded.name)
