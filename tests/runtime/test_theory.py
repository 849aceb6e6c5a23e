"""The simulator against exact queueing theory (pinned service, max_batch 1, Poisson arrivals).

Cases, replications and the CI tolerance live in model/runtime/validation.py (the same table
is in model/runtime/README.md). Each statistic must lie within the 99.9% confidence half-width of the
replication mean, and that half-width must be tight (a few % of the exact value). Every run
also passes the sample-path laws (Little, utilization, one batch per core at a time).
"""

from __future__ import annotations

import numpy as np
import pytest

from model.runtime.queueing_theory import (
    ecm1_sigma,
    erlang_c,
    gm1_wait,
    md1_mean_wait,
    mmc_wait,
)
from model.runtime.validation import cases, halfwidth, replicate
from tests.runtime.laws import check_laws


def test_theory_figures_match_the_notes() -> None:
    assert mmc_wait(4, 3.2, 1.0) == pytest.approx((0.596432, 0.745541, 3.098679), abs=1e-6)
    assert mmc_wait(1, 0.8, 1.0)[1:] == pytest.approx((4.0, 13.8629), abs=1e-4)
    assert gm1_wait(ecm1_sigma(8, 7.2, 1.0), 1.0) == pytest.approx((4.7807, 16.2195), abs=1e-4)
    assert md1_mean_wait(0.8, 1.0) == pytest.approx(2.0)
    assert erlang_c(1, 0.8) == pytest.approx(0.8)


@pytest.mark.parametrize("allow_fifo", [True, False], ids=["fifo-path", "event-loop"])
@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_simulator_reproduces_queueing_theory(case, allow_fifo: bool) -> None:
    sims = replicate(case.config, case.reps, check=check_laws, allow_fifo=allow_fifo)
    for stat, exact in case.exact.items():
        mean, half = float(np.mean(sims[stat])), halfwidth(sims[stat])
        assert half <= case.max_rel_halfwidth[stat] * exact, f"{stat}: CI too wide (+-{half})"
        assert abs(mean - exact) <= half, (
            f"{stat}: simulated {mean:.5f} +- {half:.5f}, exact {exact:.5f}"
        )
