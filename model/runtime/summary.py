"""One call for `workbench run`: simulate, then the JSON summary (a plain dict).

The CLI adds "packet" and "candidate"; everything else of the contract is here (milliseconds,
statistics after the warm-up). Round-trips through `json.dumps` as is, and the same inputs and
seed give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.runtime.bottleneck import classify
from model.runtime.inputs import RuntimeConfig
from model.runtime.simulate import RuntimeResult, simulate
from model.runtime.stats import fallback_cost, headline
from model.runtime.tail import compositions, counterfactual_attribution
from model.service import ServiceTable


@dataclass(frozen=True)
class RunReport:
    """A run's summary (the JSON contract as a dict) and the full result behind it."""

    summary: dict
    result: RuntimeResult


def summarize(
    result: RuntimeResult,
    table: ServiceTable | None = None,
    *,
    all_compiled_table: ServiceTable | None = None,
    command: str = "",
) -> dict:
    """The JSON summary of a finished run (re-simulates the counterfactuals for attribution).

    `command` is the exact command that reproduces the run; it goes into the classification.
    """
    summary = headline(result)
    p99_tail, p95_tail, mean = compositions(result, (0.01, 0.05))
    counterfactual = counterfactual_attribution(result, table, all_compiled_table)
    summary["fallback_cost_ms"] = fallback_cost(result)
    summary["tail_attribution_ms"] = {
        "slowest_1pct": p99_tail,
        "slowest_5pct": p95_tail,
        "all_measured": mean,
        "counterfactual": counterfactual,
    }
    summary["classification"] = classify(
        p99_tail,
        p95_tail,
        mean,
        counterfactual,
        command,
        utilization_mean=float(np.mean(summary["core_utilization"])),
    )
    return summary


def run_summary(
    config: RuntimeConfig,
    table: ServiceTable | None = None,
    *,
    all_compiled_table: ServiceTable | None = None,
    command: str = "",
) -> RunReport:
    """Simulate `config` and summarise it: what `workbench run PACKET --json` prints.

    Args:
        config: the run (apply --seed / --requests with dataclasses.replace first).
        table: the compile-plan model's service table (service.source: model).
        all_compiled_table: the same plan with every shape compiled (optional; makes the
            generic path's extra cost and the no-fallback counterfactual exact).
        command: the command line that reproduces the run.
    """
    result = simulate(config, table, all_compiled_table=all_compiled_table)
    summary = summarize(result, table, all_compiled_table=all_compiled_table, command=command)
    return RunReport(summary=summary, result=result)
