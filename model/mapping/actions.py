"""Retuning actions: which ones to try, and how to rank them by gain per cost.

Kinds (`ACTION_KINDS`):

* `add_bucket`: compile one more seq_len bucket at an observed shape (it stops padding up or
  falling back).
* `change_tile`: return an op with a pinned tile to the autotuner, so every bucket and batch
  size gets its own tile (the packet format pins tiles per op, not per bucket).
* `widen_bucket`: raise the largest bucket to an observed shape above it, so the shapes that fell
  back run compiled (padded) with no more buckets than before.
* `recalibrate`: refit the envelope's efficiency parameters to the kernel telemetry; its gain is
  the p99 prediction error it removes, not a latency change.

Screening: adding a bucket at shape s saves, per request, w(s) x (t_now(B, s) - t_exact(B, s))
/ B, where w is the share of requests at s, B the largest batch and t the service time of a
full batch in the current plan and with s compiled exactly. Only the `SCREENED` shapes with the
largest saving are simulated (the tail effect needs the simulator; the screen is the mechanism).

Ranking: gain = p99 reduction in ms (the mapping topic's anchor metric); cost = compile time.
gain_per_cost = p99 ms saved per second of compile. Actions with a positive gain and no compile
cost come first (by gain), then positive gains by gain per cost, then the rest by gain (they
would make the tail worse and are not recommended). Ties keep a stable order by id.
"""

from __future__ import annotations

import numpy as np

from model.service import ServiceTable

ACTION_KINDS = ("add_bucket", "change_tile", "widen_bucket", "recalibrate")
"""The retuning actions the report proposes."""

SCREENED = 6
"""Shapes simulated per kind of bucket action (add, widen), largest screened saving first."""


def shape_savings(
    current: ServiceTable, exact: ServiceTable, weights: np.ndarray, max_batch: int
) -> np.ndarray:
    """(S,) expected service time saved per request (ms) at each table shape if that shape had
    its own bucket: weight x (full-batch time now - with the shape compiled) / max_batch."""
    if not np.array_equal(current.shapes, exact.shapes):
        raise ValueError("the two service tables have different shape columns")
    row = int(current.batch_index(np.array([max_batch]))[0])
    erow = int(exact.batch_index(np.array([max_batch]))[0])
    saved = (current.time_ms[row] - exact.time_ms[erow]) / max_batch
    return np.asarray(weights, dtype=np.float64) * saved


def screen(values: np.ndarray, savings: np.ndarray, eligible: np.ndarray, keep: int = SCREENED):
    """The eligible values with the largest positive saving, at most `keep`, ascending."""
    order = np.lexsort((values, -savings))
    chosen = [int(values[i]) for i in order if eligible[i] and savings[i] > 0][:keep]
    return sorted(chosen)


def gain_per_cost(p99_gain_ms: float, compile_ms: float) -> float | None:
    """p99 ms saved per second of compile time; None when nothing needs compiling."""
    if compile_ms <= 0:
        return None
    return float(p99_gain_ms) / (float(compile_ms) / 1000.0)


def _rank_key(action: dict) -> tuple:
    gain = float(action["gain"]["p99_ms"])
    per_cost = action["gain_per_cost"]
    if gain > 0 and per_cost is None:
        return (0, -gain, action["id"])
    if gain > 0:
        return (1, -per_cost, action["id"])
    return (2, -gain, action["id"])


def rank_actions(actions: list[dict]) -> list[dict]:
    """Actions sorted best first (module docstring), each with `rank` (1 = best) and
    `recommended` (a positive p99 gain). Every action needs `id`, `gain.p99_ms`, `cost.compile_ms`
    and `gain_per_cost`."""
    ranked = sorted(actions, key=_rank_key)
    return [
        {**a, "rank": i + 1, "recommended": bool(a["gain"]["p99_ms"] > 0)}
        for i, a in enumerate(ranked)
    ]
