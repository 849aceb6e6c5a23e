"""The runtime simulator against exact queueing theory: cases, replications, confidence.

Pinned exponential or deterministic service (mean 1 ms), max_batch 1, Poisson arrivals.
Replications (seeds 1..R) are the rows; each yields one estimate after dropping its warm-up.
The tolerance is the 99.9% confidence half-width of the replication mean (normal quantile,
R >= 20). `python -m model.runtime.validation` prints the table in model/runtime/README.md; the tests
assert the same cases.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from model.runtime.inputs import (
    Arrivals,
    BatchPolicy,
    RuntimeConfig,
    RuntimeHardware,
    ServiceSpec,
    ShapeMix,
    Workload,
)
from model.runtime.queueing_theory import ecm1_sigma, gm1_wait, md1_mean_wait, mmc_wait
from model.runtime.simulate import RuntimeResult, simulate
from model.runtime.stats import core_utilization, measured

CONFIDENCE = 0.999


def poisson_pinned(
    *,
    cores: int,
    rate_per_s: float,
    mean_ms: float = 1.0,
    dist: str = "exponential",
    cv: float | None = None,
    placement: str = "central-queue",
    requests: int = 20_000,
    seed: int = 0,
    warmup_fraction: float = 0.1,
    max_batch: int = 1,
    max_queue_delay_ms: float = 0.0,
) -> RuntimeConfig:
    """One-shape Poisson workload with pinned-distribution service."""
    return RuntimeConfig(
        workload=Workload(
            Arrivals("poisson", rate_per_s=rate_per_s),
            ShapeMix((128,), (1.0,)),
            requests,
            warmup_fraction,
        ),
        hardware=RuntimeHardware(cores=cores, hbm_gbs=1000.0),
        batch_policy=BatchPolicy(max_batch, max_queue_delay_ms),
        placement=placement,
        service=ServiceSpec("distribution", dist, mean_ms, cv),
        seed=seed,
    )


@dataclass(frozen=True)
class ValidationCase:
    """A queueing system the simulator must reproduce.

    Attributes:
        name: the system (e.g. "M/M/4, central-queue").
        config: the run (seed replaced per replication).
        exact: statistic -> exact value (p_wait, mean / p95 wait in ms, util).
        reps: replications.
        max_rel_halfwidth: statistic -> largest CI half-width allowed, relative to exact (so a
            loose CI cannot hide a wrong model).
    """

    name: str
    config: RuntimeConfig
    exact: dict[str, float]
    reps: int
    max_rel_halfwidth: dict[str, float]


def cases() -> list[ValidationCase]:
    """The checked systems: M/M/c (pooled and least work), random split, round-robin, M/D/1."""
    p_wait, mmc_mean, mmc_p95 = mmc_wait(4, 3.2, 1.0)
    mmc = {"p_wait": p_wait, "mean": mmc_mean, "p95": mmc_p95, "util": 0.8}
    mmc_tol = {"p_wait": 0.02, "mean": 0.05, "p95": 0.04, "util": 0.01}
    mm1_mean, mm1_p95 = mmc_wait(1, 0.8, 1.0)[1:]
    out = [
        ValidationCase(
            f"M/M/4 rho 0.8, {p}",
            poisson_pinned(cores=4, rate_per_s=3200.0, placement=p, requests=40_000),
            mmc,
            24,
            mmc_tol,
        )
        for p in ("central-queue", "least-loaded")
    ]
    out.append(
        ValidationCase(
            "random over 4 cores = 4 x M/M/1 rho 0.8",
            poisson_pinned(cores=4, rate_per_s=3200.0, placement="random", requests=60_000),
            {"mean": mm1_mean, "p95": mm1_p95},
            24,
            {"mean": 0.06, "p95": 0.06},
        )
    )
    for cores, lam, reps, n in ((8, 7.2, 40, 80_000), (4, 3.2, 24, 40_000)):
        mean, p95 = gm1_wait(ecm1_sigma(cores, lam, 1.0), 1.0)
        out.append(
            ValidationCase(
                f"round-robin over {cores} = E_{cores}/M/1 rho {lam / cores:.1f}",
                poisson_pinned(
                    cores=cores, rate_per_s=lam * 1000, placement="round-robin", requests=n
                ),
                {"mean": mean, "p95": p95},
                reps,
                {"mean": 0.06, "p95": 0.06},
            )
        )
    out.append(
        ValidationCase(
            "M/D/1 rho 0.8",
            poisson_pinned(cores=1, rate_per_s=800.0, dist="deterministic", requests=40_000),
            {"mean": md1_mean_wait(0.8, 1.0), "util": 0.8},
            24,
            {"mean": 0.05, "util": 0.01},
        )
    )
    return out


def replicate(
    config: RuntimeConfig,
    reps: int,
    check: Callable[[RuntimeResult], None] | None = None,
    *,
    allow_fifo: bool = True,
) -> dict[str, np.ndarray]:
    """Per-replication P(wait > 0), mean wait (ms), p95 wait (ms) and mean core utilization,
    seeds 1..reps; `check` runs on every result (the tests pass the sample-path laws);
    allow_fifo=False forces the general event loop."""
    rows = []
    for seed in range(1, reps + 1):  # one simulation per replication
        result = simulate(dataclasses.replace(config, seed=seed), allow_fifo=allow_fifo)
        if check is not None:
            check(result)
        wait = result.requests.queue_wait_ms[measured(result)]
        util = float(np.mean(core_utilization(result)))
        rows.append((np.mean(wait > 0), np.mean(wait), np.percentile(wait, 95), util))
    return dict(zip(("p_wait", "mean", "p95", "util"), np.array(rows).T, strict=True))


def halfwidth(samples: np.ndarray, confidence: float = CONFIDENCE) -> float:
    """Confidence half-width of the mean of independent replications (normal quantile)."""
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    return float(z * np.std(samples, ddof=1) / np.sqrt(len(samples)))


def validation_rows() -> list[dict]:
    """One row per (case, statistic): exact, simulated mean, half-width, within."""
    rows = []
    for case in cases():
        sims = replicate(case.config, case.reps)
        for stat, exact in case.exact.items():
            mean, half = float(np.mean(sims[stat])), halfwidth(sims[stat])
            rows.append(
                {
                    "case": case.name,
                    "statistic": stat,
                    "exact": exact,
                    "simulated": mean,
                    "halfwidth": half,
                    "within": abs(mean - exact) <= half,
                    "reps": case.reps,
                    "requests": case.config.workload.requests,
                }
            )
    return rows


def main() -> None:
    """Print the validation table (markdown)."""
    units = {"p_wait": "", "mean": " ms", "p95": " ms", "util": ""}
    names = {"p_wait": "P(wait > 0)", "mean": "mean wait", "p95": "p95 wait", "util": "utilization"}
    print("| system | statistic | exact | simulated (99.9% CI) | replications x requests |")
    print("|---|---|---|---|---|")
    for r in validation_rows():
        u = units[r["statistic"]]
        print(
            f"| {r['case']} | {names[r['statistic']]} | {r['exact']:.4f}{u} | "
            f"{r['simulated']:.4f} +- {r['halfwidth']:.4f}{u} {'ok' if r['within'] else 'OFF'} | "
            f"{r['reps']} x {r['requests']:,} |"
        )


if __name__ == "__main__":
    main()
