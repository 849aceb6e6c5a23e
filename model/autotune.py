"""The autotuner: pick, per point, the candidate tile with the lowest predicted phase time.

As a compiler's autotuner would, it searches the candidate tiles of `model.tiles` with the cost
model of `model.kernels`. Split-K candidates are tried only where the best unsplit tile leaves
the core under-filled (fewer than two waves of tiles), the only case where cutting the
reduction can pay for its partial-sum traffic; this also keeps the search cheap.
"""

from __future__ import annotations

import numpy as np

from model.hardware import HardwareEnvelope
from model.kernels import PhaseCost, attention_phase, gemm_phase
from model.tiles import attention_candidates, gemm_candidates


def _pick_best(cost: PhaseCost) -> tuple[PhaseCost, np.ndarray]:
    index = np.argmin(cost.time_us, axis=1)
    return cost.pick(index), index


def best_gemm(
    hw: HardwareEnvelope,
    dtype: str,
    m,
    n,
    k,
    *,
    a_on_chip: bool = False,
    a_written: bool = False,
    out_fraction: float = 1.0,
) -> tuple[PhaseCost, np.ndarray]:
    """The fastest candidate GEMM tile at each point: ((P,) cost, (P, 4) [m, n, k, split])."""
    candidates = gemm_candidates(hw, hw.dtype_bytes(dtype))
    m = np.asarray(m, dtype=np.float64).ravel()
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), m.shape)
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), m.shape)
    kwargs = {"a_on_chip": a_on_chip, "a_written": a_written, "out_fraction": out_fraction}
    whole = candidates[candidates[:, 3] == 1]
    cost, index = _pick_best(gemm_phase(hw, dtype, m, n, k, whole, **kwargs))
    chosen = whole[index]
    tiles = np.ceil(m / chosen[:, 0]) * np.ceil(n / chosen[:, 1])
    underfilled = np.flatnonzero(tiles < 2 * hw.units_per_core)
    split = candidates[candidates[:, 3] > 1]
    if len(underfilled) and len(split):
        sub = underfilled
        cost2, index2 = _pick_best(gemm_phase(hw, dtype, m[sub], n[sub], k[sub], split, **kwargs))
        better = np.flatnonzero(cost2.time_us < cost.time_us[sub])
        cost = cost.with_rows(sub[better], cost2.pick(better, columns=False))
        chosen[sub[better]] = split[index2[better]]
    return cost, chosen


def best_attention(
    hw: HardwareEnvelope,
    dtype: str,
    batch,
    q_len,
    kv_len,
    heads,
    kv_heads,
    head_dim: int,
    causal: bool,
    *,
    q_in_hbm: bool = True,
    o_to_hbm: bool = True,
    pack_query_heads: bool = True,
) -> tuple[PhaseCost, np.ndarray]:
    """The fastest candidate attention tile at each point: ((P,) cost, (P, 3) [q, kv, split]).

    Causal prefill has a tile per query block already, so KV splits are not searched there.
    """
    candidates = attention_candidates(hw, head_dim, hw.dtype_bytes(dtype))
    if causal:
        candidates = candidates[candidates[:, 2] == 1]
    cost, index = _pick_best(
        attention_phase(
            hw, dtype, batch, q_len, kv_len, heads, kv_heads, head_dim, causal, candidates,
            q_in_hbm=q_in_hbm, o_to_hbm=o_to_hbm, pack_query_heads=pack_query_heads,
        )
    )  # fmt: skip
    return cost, candidates[index]
