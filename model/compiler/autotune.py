"""The autotuner: pick, per point, the candidate tile with the lowest predicted phase time.

As a compiler's autotuner would, it searches the candidate tiles of `model.compiler.tiles` with the cost
model of `model.compiler.kernels`. Split-K candidates are tried only where the best unsplit tile leaves
the core under-filled (fewer than two waves of tiles), the only case where cutting the
reduction can pay for its partial-sum traffic; this also keeps the search cheap. The search
runs in float64: a float32 search was 30% faster but resolved near-ties to tiles up to 1e-4
slower than the optimum, which broke "more work is never faster" (found by hypothesis).
"""

from __future__ import annotations

import numpy as np

from model.compiler.hardware import HardwareEnvelope
from model.compiler.kernels import PhaseCost, attention_phase, gemm_phase
from model.compiler.tiles import attention_tile_rows, gemm_tile_rows


def gemm_candidates(hw: HardwareEnvelope, dtype_bytes: int) -> np.ndarray:
    """(C, 4) float array of [m, n, k, split]: the GEMM tiles searched (`tiles.gemm_tile_rows`)."""
    return np.asarray(gemm_tile_rows(hw, dtype_bytes), dtype=np.float64)


def attention_candidates(hw: HardwareEnvelope, head_dim: int, dtype_bytes: int) -> np.ndarray:
    """(C, 3) float array of [q, kv, split]: the attention tiles searched
    (`tiles.attention_tile_rows`)."""
    return np.asarray(attention_tile_rows(hw, head_dim, dtype_bytes), dtype=np.float64)


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
    batch=1.0,
) -> tuple[PhaseCost, np.ndarray]:
    """The fastest candidate GEMM tile at each point: ((P,) cost, (P, 4) [m, n, k, split]).

    batch: independent GEMMs per point run as one batched kernel (scalar or (P,))."""
    candidates = gemm_candidates(hw, hw.dtype_bytes(dtype))
    m = np.asarray(m, dtype=np.float64).ravel()
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), m.shape)
    k = np.broadcast_to(np.asarray(k, dtype=np.float64), m.shape)
    batch = np.broadcast_to(np.asarray(batch, dtype=np.float64), m.shape)
    kwargs = {"a_on_chip": a_on_chip, "a_written": a_written, "out_fraction": out_fraction}
    search = kwargs
    whole = candidates[candidates[:, 3] == 1]
    times = gemm_phase(hw, dtype, m, n, k, whole, batch=batch, **search).time_us
    index = np.argmin(times, axis=1)
    best = times[np.arange(len(m)), index]
    chosen = whole[index]
    tiles = np.ceil(m / chosen[:, 0]) * np.ceil(n / chosen[:, 1]) * batch
    sub = np.flatnonzero(tiles < 2 * hw.units_per_core)
    split = candidates[candidates[:, 3] > 1]
    if len(sub) and len(split):
        times = gemm_phase(
            hw, dtype, m[sub], n[sub], k[sub], split, batch=batch[sub], **search
        ).time_us
        index = np.argmin(times, axis=1)
        better = times[np.arange(len(sub)), index] < best[sub]
        chosen[sub[better]] = split[index[better]]
    cost = gemm_phase(hw, dtype, m, n, k, chosen, per_point=True, batch=batch, **kwargs)
    return cost.pick(np.zeros(len(m), dtype=np.int64)), chosen


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
    pack_query_heads=True,
    packed_wave_cycles: float = 0.0,
    packed_fixed_cycles: float = 0.0,
    per_head_fixed_cycles: float = 0.0,
) -> tuple[PhaseCost, np.ndarray]:
    """The fastest candidate attention tile at each point: ((P,) cost, (P, 3) [q, kv, split]).

    pack_query_heads and the packed kernel's extra cycles: as for kernels.attention_phase.

    Causal prefill has a tile per query block already, so KV splits are not searched there.
    """
    candidates = attention_candidates(hw, head_dim, hw.dtype_bytes(dtype))
    if causal:
        candidates = candidates[candidates[:, 2] == 1]
    shape = (batch, q_len, kv_len, heads, kv_heads, head_dim, causal)
    kwargs = {
        "q_in_hbm": q_in_hbm, "o_to_hbm": o_to_hbm, "pack_query_heads": pack_query_heads,
        "packed_wave_cycles": packed_wave_cycles, "packed_fixed_cycles": packed_fixed_cycles,
        "per_head_fixed_cycles": per_head_fixed_cycles,
    }  # fmt: skip
    times = attention_phase(hw, dtype, *shape, candidates, **kwargs).time_us
    chosen = candidates[np.argmin(times, axis=1)]
    cost = attention_phase(hw, dtype, *shape, chosen, per_point=True, **kwargs)
    return cost.pick(np.zeros(len(chosen), dtype=np.int64)), chosen
