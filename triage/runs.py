"""Running a packet configuration through the model: what `workbench run` and the app call."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.runtime.simulate import RuntimeResult, simulate
from model.runtime.summary import RunReport, summarize
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
    The dynamic batcher, also for a serving packet (its decode step): see `run_serving_scenario`."""
    return summarize_scenario(scenario, path, simulate_scenario(scenario))


def run_serving_scenario(scenario: Scenario, path: str) -> ServingReport:
    """Run a serving scenario's continuous scheduler (triage/serving_scenario.py)."""
    from triage.serving_scenario import run_serving

    command = reproduce_command(path, scenario)
    summary, result = run_serving(scenario.serving, scenario.iteration_table, command)
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
    scheduler; `workbench run`)."""
    scenario = build_scenario(loaded, candidate, seed=seed, requests=requests)
    if scenario.is_serving:
        return run_serving_scenario(scenario, loaded.name)
    return run_scenario(scenario, loaded.name)
