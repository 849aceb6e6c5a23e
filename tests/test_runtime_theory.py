"""The simulator against exact queueing theory (pinned service, max_batch 1, Poisson arrivals).

Replications (seeds) are the rows; each gives one estimate after its warm-up. The tolerance is
the 99.9% confidence half-width of the replication mean (normal quantile; >= 20 replications),
and each test also requires that half-width to be tight (a few % of the exact value) so a
loose CI cannot hide a wrong model. Every run also passes the sample-path laws.
"""

from __future__ import annotations

import dataclasses
from statistics import NormalDist

import numpy as np
import pytest

from model.queueing_theory import ecm1_sigma, erlang_c, gm1_wait, md1_mean_wait, mmc_wait
from model.runtime import simulate
from model.runtime_stats import core_utilization, measured
from tests.runtime_helpers import pinned_config
from tests.runtime_laws import check_laws

Z = NormalDist().inv_cdf(1 - 0.001 / 2)
REPS = 24


def replicate(cfg, reps: int = REPS) -> dict[str, np.ndarray]:
    """Per-replication P(wait>0), mean wait, p95 wait and mean utilization (seeds 1..reps)."""
    rows = []
    for seed in range(1, reps + 1):
        result = simulate(dataclasses.replace(cfg, seed=seed))
        check_laws(result)
        wait = result.requests.queue_wait_ms[measured(result)]
        util = float(np.mean(core_utilization(result)))
        rows.append((np.mean(wait > 0), np.mean(wait), np.percentile(wait, 95), util))
    return dict(zip(("p_wait", "mean", "p95", "util"), np.array(rows).T, strict=True))


def assert_matches(samples: np.ndarray, exact: float, max_rel_halfwidth: float) -> None:
    mean = float(np.mean(samples))
    half = Z * float(np.std(samples, ddof=1)) / np.sqrt(len(samples))
    assert half <= max_rel_halfwidth * exact, f"CI too wide to test anything: +-{half}"
    assert abs(mean - exact) <= half, f"simulated {mean:.5f} +- {half:.5f}, exact {exact:.5f}"


def test_theory_figures_match_the_notes() -> None:
    assert mmc_wait(4, 3.2, 1.0) == pytest.approx((0.596432, 0.745541, 3.098679), abs=1e-6)
    assert gm1_wait(ecm1_sigma(8, 7.2, 1.0), 1.0) == pytest.approx((4.7807, 16.2195), abs=1e-4)
    assert md1_mean_wait(0.8, 1.0) == pytest.approx(2.0)


@pytest.mark.parametrize("placement", ["central-queue", "least-loaded"])
def test_central_queue_and_least_work_are_mmc(placement: str) -> None:
    """c=4, rho=0.8, mu=1/ms: Erlang C, mean wait C/(c mu - lambda), p95 ln(C/0.05)/(c mu - lambda).
    Joining the core with least remaining work gives the same waits as one FIFO queue."""
    cfg = pinned_config(cores=4, rate_per_s=3200.0, placement=placement, requests=40_000)
    sims = replicate(cfg)
    p_wait, mean, p95 = mmc_wait(4, 3.2, 1.0)
    assert_matches(sims["p_wait"], p_wait, 0.02)
    assert_matches(sims["mean"], mean, 0.05)
    assert_matches(sims["p95"], p95, 0.04)
    assert_matches(sims["util"], 0.8, 0.01)  # utilization law: rho = lambda / (c mu)


def test_random_split_is_independent_mm1() -> None:
    """Random placement over 4 cores at lambda=3.2/ms: each core is M/M/1 at rho 0.8."""
    cfg = pinned_config(cores=4, rate_per_s=3200.0, placement="random", requests=60_000)
    sims = replicate(cfg)
    _, mean, p95 = mmc_wait(1, 0.8, 1.0)
    assert (mean, p95) == pytest.approx((4.0, 13.8629), abs=1e-4)
    assert_matches(sims["mean"], mean, 0.06)
    assert_matches(sims["p95"], p95, 0.06)


@pytest.mark.parametrize(
    ("cores", "lam", "reps", "requests"), [(8, 7.2, 40, 80_000), (4, 3.2, REPS, 40_000)]
)
def test_round_robin_is_ecm1(cores: int, lam: float, reps: int, requests: int) -> None:
    """Round-robin: each core sees Erlang(c) gaps, E_c/M/1. rho 0.9 (the notes' case, more
    replications) and rho 0.8."""
    cfg = pinned_config(
        cores=cores, rate_per_s=lam * 1000, placement="round-robin", requests=requests
    )
    sims = replicate(cfg, reps)
    mean, p95 = gm1_wait(ecm1_sigma(cores, lam, 1.0), 1.0)
    assert_matches(sims["mean"], mean, 0.06)
    assert_matches(sims["p95"], p95, 0.06)


def test_deterministic_single_core_is_md1() -> None:
    """M/D/1 at rho 0.8, D = 1 ms: Pollaczek-Khinchine mean wait rho D / (2 (1 - rho)) = 2 ms."""
    cfg = pinned_config(cores=1, rate_per_s=800.0, dist="deterministic", requests=40_000)
    sims = replicate(cfg)
    assert_matches(sims["mean"], md1_mean_wait(0.8, 1.0), 0.05)
    assert_matches(sims["util"], 0.8, 0.01)


def test_erlang_c_reduces_to_rho_for_one_server() -> None:
    assert erlang_c(1, 0.8) == pytest.approx(0.8)
