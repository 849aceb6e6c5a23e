"""How one validation cell is judged: on what its load asks, every miss named with its target.

Textual-free and light (no model imports), so the release rule, the report and the app share it.
p95 and p99 are held to the SLA at every load. Throughput is held to the load the cell offered
(it kept up, within the run's sampling tolerance) at every load, and to the production floor
`min_throughput_per_s` only at production load and above: a half-load cell is offered half the
production rate and can never serve more, so the floor says nothing about it. A serving
cell (its figures carry ttft_p95_ms and tpot_p95_ms) is also held to the SLA's `ttft_p95_ms`
and `tpot_p95_ms` at every load, as p95 and p99 (end-to-end latency there) are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from packets.schema import CellMiss, Sla

PRODUCTION_LOAD = 1.0  # load factor of the packet's own arrival rate
# Keep-up check. A cell that keeps up completes its n measured requests over the span of their
# n - 1 arrival gaps plus the last one's latency, so its measured throughput is the offered
# rate up to two terms: (1) sampling: the sum of n gaps of coefficient of variation cv has a
# relative standard deviation cv / sqrt(n) (central limit theorem for renewal processes; cv 1
# for Poisson arrivals); (2) the window's tail: the last request's latency, allowed up to the
# SLA's p99, lengthens a window of n / rate seconds by p99 * rate / n. THROUGHPUT_Z standard
# deviations of (1) are allowed: a one-sided normal tail of 3.2e-5 per cell, so the 18
# candidate cells of a default matrix together falsely miss with probability < 0.1%.
THROUGHPUT_Z = 4.0


def keep_up_tolerance(measured: int, cv: float, rate_per_s: float, p99_target_ms: float) -> float:
    """Fraction of its offered rate a cell that keeps up may measure below it: THROUGHPUT_Z
    sampling standard deviations (cv / sqrt(measured)) plus the window's lengthening by a
    last request finishing at the SLA's p99 (p99 * rate / measured). `measured` requests,
    `rate_per_s` offered (1/s), `p99_target_ms` (ms)."""
    n = max(measured, 1)
    return THROUGHPUT_Z * cv / math.sqrt(n) + p99_target_ms / 1e3 * rate_per_s / n


def judge_cell(
    sla: Sla,
    load_factor: float,
    rate_per_s: float,
    figures: Mapping[str, float],
    tolerance: float,
) -> list[CellMiss]:
    """The targets a cell missed (empty: it meets what its load asks). `figures` holds
    latency_p95_ms, latency_p99_ms (ms) and throughput_per_s (1/s) of the run, and for a
    serving run ttft_p95_ms and tpot_p95_ms (ms); `tolerance` is the keep-up tolerance
    (`keep_up_tolerance`) for this cell's run."""
    misses = []
    for metric, column, target in (
        ("p95_ms", "latency_p95_ms", sla.p95_ms),
        ("p99_ms", "latency_p99_ms", sla.p99_ms),
        ("ttft_p95_ms", "ttft_p95_ms", sla.ttft_p95_ms),
        ("tpot_p95_ms", "tpot_p95_ms", sla.tpot_p95_ms),
    ):
        if target is not None and figures.get(column) is not None and figures[column] > target:
            misses.append(CellMiss(metric=metric, value=figures[column], target=target,
                                   basis=f"SLA {metric}"))  # fmt: skip
    served = figures["throughput_per_s"]
    needed = rate_per_s * (1.0 - tolerance)
    if served < needed:
        basis = f"offered {rate_per_s:.1f}/s less {tolerance:.1%} sampling tolerance"
        misses.append(CellMiss(metric="throughput_per_s", value=served, target=needed, basis=basis))
    floor = sla.min_throughput_per_s
    if floor is not None and load_factor >= PRODUCTION_LOAD and served < floor:
        misses.append(CellMiss(metric="throughput_per_s", value=served, target=floor,
                               basis="SLA min_throughput_per_s"))  # fmt: skip
    return misses


UNITS = {
    "p95_ms": " ms",
    "p99_ms": " ms",
    "throughput_per_s": "/s",
    "ttft_p95_ms": " ms",
    "tpot_p95_ms": " ms",
}
NAMES = {
    "p95_ms": "p95",
    "p99_ms": "p99",
    "throughput_per_s": "throughput",
    "ttft_p95_ms": "TTFT p95",
    "tpot_p95_ms": "TPOT p95",
}


def miss_figures(miss: CellMiss) -> str:
    """The value against the target: '80.71 ms > 76.00 ms', '120.31/s < 123.20/s'."""
    unit = UNITS[miss.metric]
    sign = "<" if miss.metric == "throughput_per_s" else ">"
    return f"{miss.value:.2f}{unit} {sign} {miss.target:.2f}{unit}"


def miss_text(miss: CellMiss) -> str:
    """One line: 'p99 80.71 ms > 76.00 ms (SLA p99_ms)'."""
    return f"{NAMES[miss.metric]} {miss_figures(miss)} ({miss.basis})"
