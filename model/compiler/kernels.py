"""Kernel cost: the time, HBM traffic and bound of one op's phase inside a kernel.

Every op a kernel runs is a *phase*; a kernel's device time is the device floor plus the sum of
its phases (a fused kernel runs its ops one after another on each tile). Mechanisms:

* Tiles and waves. A GEMM or attention phase is cut into tiles; the tiles run in waves over the
  core's units (`ceil(tiles / units)` waves, the last one partial: wave quantization). Padding a
  dimension up to a tile multiple executes wasted FLOPs.
* Per tile, per wave: the main loop takes max(compute, operand feed from the shared cache, HBM
  operand traffic at this unit's share of bandwidth); each wave first waits a fill (a cycle
  count, `HardwareEnvelope.fill_s`; a GEMM whose k loop is shorter than the pipeline primes
  fewer stages and waits one round trip plus that share of it, `prologue_fill_s`); the
  epilogue (writing the output tile) follows the main loop unoverlapped. A GEMM library with a persistent schedule fills once per kernel and
  overlaps epilogues (`library.GemmLibrary`); a stream-K one shares the k iterations of all
  tiles evenly over a persistent grid and fixes up split tiles through fp32 partials
  (`stream_k_schedule`); with cluster multicast the tiles of a cluster share their B-panel
  loads.
  A unit's HBM share is the core's achievable bandwidth divided by the active units, capped by
  the unit's own port (so one busy unit cannot pull the whole HBM).
* HBM traffic with reuse: the tiles of one wave share operand panels through the shared cache
  (a wave covers about sqrt(units) row panels x sqrt(units) column panels); operands that fit
  half the shared cache are read once.
* An operand produced on chip by an earlier op of the same kernel costs no HBM traffic, but a
  GEMM must hold its whole m-tile x K panel in SRAM; the part that does not fit spills (written
  to HBM and read back), and is reported as spill bytes. A GEMM whose operand another tiled op
  of the kernel produced runs inside that op's tiles, split over them (`fused_gemm_phase`).
* Operands that fit half the shared cache are read from HBM once; `shared_cache_mib` is the
  core's share of it (`HardwareEnvelope.with_busy_cores`).
* Elementwise phases stream their bytes at the core's achievable bandwidth or run at vector
  throughput, whichever is slower. In a measurement that runs a layer's kernels in sequence an
  input just written by an elementwise kernel may be read from the shared cache, and the
  write-back cache keeps the last writes of a kernel dirty for later kernels to write back.

All functions are vectorized: `m` etc. are (P,) arrays over points, candidates are (C, k) arrays;
results are (P, C) arrays (or (P, 1) with `per_point` tiles). Times are microseconds, traffic
bytes, rates bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.compiler.hardware import HardwareEnvelope
from model.compiler.library import GemmLibrary
from model.compiler.tiles import STAGES

SOFTMAX_OPS_PER_SCORE = 32.0
"""Vector-unit operations per attention score (scale, mask, running max, exp, sum, rescale and
conversions of online softmax), run on the non-matrix units and not overlapped with the matrix
work (FlashAttention-2 on Ampere). Set from A100 prefill rows (README "Attention")."""

PARTIAL_BYTES = 4.0
"""Bytes per element of split-K / split-KV partial results (fp32), written and read back once."""

CACHE_HIT_SPEEDUP = 1.5
"""How much sooner a shared-cache hit returns than an HBM access: pointer-chase microbenchmarks
put A100's L2-vs-DRAM latency ratio at 1.5-2x; 1.5 fits the warm-cache layer-op rows best. Used
only for inputs found in the cache (`elementwise_phase(warm_cache=...)`: a measurement running a
layer's kernels in sequence, the input written by the elementwise kernel before)."""


@dataclass(frozen=True)
class PhaseCost:
    """Cost of one op's phase for each point and candidate tile; arrays broadcast to (P, C).

    Attributes:
        time_us: phase time on the core, us.
        memory_bound: True where HBM traffic, not compute, sets the phase time.
        hbm_bytes: bytes read from and written to HBM.
        spill_bytes: the part of hbm_bytes caused by on-chip working sets that overflow SRAM.
        exec_flops: FLOPs executed, padding included.
        sram_bytes: SRAM one unit holds for the phase (staging plus resident panels), bytes.
    """

    time_us: np.ndarray
    memory_bound: np.ndarray
    hbm_bytes: np.ndarray
    spill_bytes: np.ndarray
    exec_flops: np.ndarray
    sram_bytes: np.ndarray

    def pick(self, index: np.ndarray, columns: bool = True) -> PhaseCost:
        """With columns: the (P,) cost of candidate index[p] at each point p of a (P, C) cost.
        Without: the rows index[i] of a (P,) cost (gathering points)."""
        names = ("time_us", "memory_bound", "hbm_bytes", "spill_bytes", "exec_flops", "sram_bytes")
        if not columns:
            return PhaseCost(*(np.asarray(getattr(self, n))[index] for n in names))
        rows = np.arange(len(index))
        shape = self.time_us.shape
        return PhaseCost(*(np.broadcast_to(getattr(self, n), shape)[rows, index] for n in names))


PIPELINE_K = 128.0
"""k elements a GEMM tile's multistage pipeline primes before its main loop runs at its steady
rate: cuBLAS's Ampere tensor-op kernels stage 4 x 32 (`..._stages_32x4_...` kernel names; 32x3,
32x5 and 64x3 variants exist) and CUTLASS's sm80 `MmaMultistage` prologue issues `kStages - 1`
stages of k-tiles, masking off the loads past the end of the k loop
(`iterator.clear_mask(gemm_k_iterations == 0)`). A k loop shorter than the pipeline primes
only its own k elements, so its wave waits a shorter fill (`prologue_fill_s`)."""

ROUND_TRIP_CYCLES = 0.5e-6 * 312e12 / (108 * 2048)
"""One DRAM round trip in SM cycles, the part of a wave's fill every tile waits however short
its k loop: ~0.5 us on A100 (pointer-chase microbenchmarks put A100/H100 DRAM latency at
0.5-0.6 us; the fill's calibration lower bound), 705 cycles at the A100's 1.41 GHz."""


def prologue_fill_s(hw: HardwareEnvelope, k_slice: np.ndarray) -> np.ndarray:
    """Fill a wave of GEMM tiles waits, s, for a per-tile k loop of `k_slice` elements: one DRAM
    round trip, plus the rest of the device's fill (`HardwareEnvelope.fill_s`) in proportion to
    the pipeline stages the loop primes (min(k_slice, PIPELINE_K) / PIPELINE_K). A k loop of
    PIPELINE_K or more waits the whole fill, as before."""
    fill = hw.fill_s()
    round_trip = min(fill, ROUND_TRIP_CYCLES / (hw.clock_ghz * 1e9 * hw.clock_scale))
    primed = np.minimum(k_slice, PIPELINE_K) / PIPELINE_K
    return round_trip + (fill - round_trip) * primed


def _col(values) -> np.ndarray:
    """A (P, 1) float column from a scalar or (P,) array."""
    return np.asarray(values, dtype=np.float64).reshape(-1, 1)


def _waves(
    hw: HardwareEnvelope,
    tiles: np.ndarray,
    compute_s: np.ndarray,
    arithmetic_s: np.ndarray,
    tile_in_bytes: np.ndarray,
    tile_out_bytes: np.ndarray,
    library: GemmLibrary | None = None,
    fill_s=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Time (s) of `tiles` tiles run in waves over the core's units, and the memory-bound flag.

    compute_s: per-tile main-loop time without HBM (arithmetic or cache feed, the slower).
    arithmetic_s: per-tile arithmetic alone; the phase is memory-bound when its HBM traffic
        takes longer than that (its time then stretches under HBM contention).
    tile_in_bytes / tile_out_bytes: per-tile HBM operand reads and epilogue writes.
    library: the GEMM library's schedule (None: one thread block per tile, in waves). A
        persistent schedule fills its pipeline once per kernel instead of once per wave; with
        an overlapped epilogue a full wave lasts max(main loop, epilogue), the last wave's
        epilogue still follows its main loop.
    fill_s: the fill each wave waits, s, scalar or broadcastable to `tiles` (None: the device's
        `fill_s()`; GEMMs pass `prologue_fill_s`, shorter for a k loop shorter than the pipeline).
    """
    units = hw.units_per_core
    core_bps, port_bps = hw.core_hbm_bps(), hw.unit_feed_bps()
    waves = np.ceil(tiles / units)
    last = tiles - (waves - 1) * units
    full_share = min(core_bps / units, port_bps)
    last_share = np.minimum(core_bps / np.maximum(last, 1.0), port_bps)
    # Every wave waits one fill latency for its first operands (once, when persistent).
    fill = hw.fill_s() if fill_s is None else fill_s
    persistent = library is not None and library.schedule in ("persistent", "stream-k")
    fills = 1.0 if persistent else waves
    main = np.maximum(compute_s, tile_in_bytes / full_share)
    if library is not None and library.epilogue_overlap:
        full = np.maximum(main, tile_out_bytes / full_share)
    else:
        full = main + tile_out_bytes / full_share
    part = np.maximum(compute_s, tile_in_bytes / last_share) + tile_out_bytes / last_share
    time = (waves - 1) * full + part + fills * fill
    memory = (waves - 1) * (tile_in_bytes + tile_out_bytes) / full_share + (
        tile_in_bytes + tile_out_bytes
    ) / last_share
    return time, memory > waves * arithmetic_s


def stream_k_schedule(
    hw: HardwareEnvelope,
    tiles: np.ndarray,
    k_steps: np.ndarray,
    compute_s: np.ndarray,
    arithmetic_s: np.ndarray,
    tile_in_bytes: np.ndarray,
    tile_out_bytes: np.ndarray,
    partial_bytes: np.ndarray,
    library: GemmLibrary,
    fill_s,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Time (s), memory-bound flag and fix-up bytes of `tiles` tiles of `k_steps` MAC-loop
    iterations each under a stream-K schedule (library.py "Schedules"; Osama et al., PPoPP 2023).

    The tiles x k_steps iterations are cut into contiguous ranges over a persistent grid of one
    block per unit (fewer when there are fewer iterations), as even as integers allow (the
    first iterations % blocks ranges one iteration longer), so no unit idles in a partial last
    wave: the kernel lasts as long as its longest range, ceil(iterations / blocks) iterations.
    Per iteration a block runs 1/k_steps of a tile's main loop (compute or feed, or its HBM
    operand share at the core bandwidth split over the blocks). It fills its pipeline once,
    writes the epilogue of each tile it finishes (after its main loop unless the library
    overlaps epilogues), and where a range boundary falls inside a tile that tile is fixed up:
    every block holding a share of it but the one finishing it writes a full tile of fp32
    partials (`partial_bytes`) and the finishing block waits one fill for them, then reads them
    (at the unit's cache feed rate when all partials fit half the shared cache, else at its HBM
    share). A tile split by b boundaries costs b partial tiles written and read back; with
    ranges of at least one tile each tile holds at most one boundary, so the count is the split
    tiles. The fix-up bytes are counted as HBM traffic (the workspace is written back).

    tile_in_bytes / tile_out_bytes: one tile's HBM operand reads and epilogue writes.
    fill_s: the fill of the pipeline, s (GEMMs pass `prologue_fill_s`).
    Returns (time s, memory-bound flag, fix-up bytes written and read back).
    """
    units = hw.units_per_core
    core_bps, port_bps = hw.core_hbm_bps(), hw.unit_feed_bps()
    iterations = tiles * k_steps
    blocks = np.minimum(iterations, units)
    per_block = np.ceil(iterations / blocks)
    share = np.minimum(core_bps / blocks, port_bps)
    main = np.maximum(compute_s, tile_in_bytes / share)
    partials = _inner_boundaries(iterations, blocks, k_steps, units)
    # Epilogues a block writes: the tiles it finishes; with an overlapped epilogue only the
    # last one follows the main loop.
    finished = np.ceil(per_block / k_steps)
    epilogues = 1.0 if library.epilogue_overlap else finished
    body = per_block / k_steps * main + epilogues * tile_out_bytes / share
    # The fix-up on the critical path: one partial tile written, the finishing block's wait
    # for it (a fill) and its reads of the partials of every other block sharing the tile.
    fixup_bytes = 2.0 * partials * partial_bytes
    cached = fixup_bytes / 2.0 <= hw.shared_cache_mib * 2**20 / 2
    rate = np.where(cached, port_bps, share)
    shared_by = np.maximum(np.ceil(k_steps / per_block) - 1.0, 1.0)
    fixup_io = np.where(partials > 0, (1.0 + shared_by) * partial_bytes / rate, 0.0)
    time = fill_s + body + np.where(partials > 0, fill_s, 0.0) + fixup_io
    memory = per_block / k_steps * (tile_in_bytes + tile_out_bytes) / share + fixup_io
    return time, memory > per_block / k_steps * arithmetic_s, fixup_bytes


def _inner_boundaries(iterations, blocks, k_steps, units: int) -> np.ndarray:
    """How many of the stream-K range boundaries fall strictly inside a tile: with q =
    iterations // blocks and r = iterations % blocks, block j's range ends at j q + min(j, r);
    a boundary inside a tile is one whose position is not a multiple of k_steps."""
    iterations, blocks, k_steps = np.broadcast_arrays(iterations, blocks, k_steps)
    q, r = np.floor(iterations / blocks), np.mod(iterations, blocks)
    count = np.zeros(iterations.shape)
    for j in range(1, units):
        end = j * q + np.minimum(j, r)
        count += (j < blocks) & (np.mod(end, k_steps) != 0)
    return count


def _split_waves(
    hw: HardwareEnvelope,
    tiles: np.ndarray,
    split: np.ndarray,
    compute_s: np.ndarray,
    arithmetic_s: np.ndarray,
    reads: np.ndarray,
    out: np.ndarray,
    out_elements: np.ndarray,
    tile_reads: np.ndarray | None = None,
    full_tiles: np.ndarray | None = None,
    library: GemmLibrary | None = None,
    fill_s=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Waves of tiles plus, when the reduction is split, the serialized merge pass.

    With split > 1 the tiles write fp32 partials (split x out_elements) instead of the output;
    a merge pass then reads them back and writes `out`. A wave lasts as long as a *full* tile:
    `tile_reads` is a full tile's HBM reads (default reads / tiles) and `full_tiles` the output
    measured in full tiles (fractional where edge tiles are ragged; default tiles).
    Returns (time s, memory-bound flag, HBM bytes written and read back beyond `reads`).
    """
    per_read = reads / tiles if tile_reads is None else tile_reads
    per = tiles if full_tiles is None else full_tiles
    if np.all(split == 1):  # nothing to merge (the common case: skip the bookkeeping)
        time, memory_bound = _waves(
            hw, tiles, compute_s, arithmetic_s, per_read, out / per, library, fill_s
        )
        return time, memory_bound, out + 0.0 * time
    partials = np.where(split > 1, split * out_elements * PARTIAL_BYTES, 0.0)
    tile_writes = np.where(split > 1, partials, out) / per
    time, memory_bound = _waves(
        hw, tiles, compute_s, arithmetic_s, per_read, tile_writes, library, fill_s
    )
    merge_s = np.where(split > 1, hw.fill_s() + (partials + out) / hw.core_hbm_bps(), 0.0)
    return time + merge_s, memory_bound, out + 2.0 * partials


def gemm_phase(
    hw: HardwareEnvelope,
    dtype: str,
    m,
    n,
    k,
    candidates: np.ndarray,
    *,
    a_on_chip: bool = False,
    a_written: bool = False,
    out_fraction: float = 1.0,
    per_point: bool = False,
    precision: type = np.float64,
    batch=1.0,
) -> PhaseCost:
    """Cost of C[m, n] = A[m, k] @ B[k, n] for each point and candidate tile [m, n, k, split].

    a_on_chip: A was produced by an earlier op of the same kernel; each tile must hold its
        m-tile x K panel of A in SRAM, and the overflow spills to HBM (written, read back).
    a_written: A leaves the kernel anyway, so an overflow only costs reading it back.
    out_fraction: the fraction of C's columns that leave the kernel (written in the epilogue);
        the rest is consumed on chip by a later op of the same kernel.
    B is a weight (or any operand) read from HBM.
    per_point: `candidates` is (P, 4), one tile per point (results are (P, 1)).
    precision: float type of the arithmetic (float32 halves the memory a search moves).
    batch: independent GEMMs of this shape run by one kernel (a strided batched GEMM), scalar
        or (P,): their tiles share one grid (and its waves); each has its own A, B and C.
    """
    b = hw.dtype_bytes(dtype)
    M, N, K = (_col(v).astype(precision) for v in (m, n, k))
    batches = _col(batch).astype(precision)
    batched = bool(np.any(batches != 1.0))  # skip the batch bookkeeping for plain GEMMs
    table = np.asarray(candidates, dtype=precision)
    tm, tn, tk, split = (table[:, i][:, None] if per_point else table[:, i][None, :]
                         for i in range(4))  # fmt: skip
    m_tiles, n_tiles = np.ceil(M / tm), np.ceil(N / tn)
    k_slice = np.ceil(K / split)
    tk = np.minimum(tk, np.ceil(k_slice / hw.tile_granule) * hw.tile_granule)  # never step past K
    k_steps = np.ceil(k_slice / tk)
    tiles = m_tiles * n_tiles * split
    if batched:
        tiles = tiles * batches
    active = np.minimum(tiles, hw.units_per_core)

    tile_flops = 2.0 * tm * tn * tk * k_steps
    arithmetic_s = tile_flops / hw.unit_flops(dtype)
    # Operand rows/columns a tile fetches into SRAM (padding is zero-filled, not fetched).
    rows, cols = np.minimum(tm, M), np.minimum(tn, N)
    staging = STAGES * (tm + tn) * tk * b
    a_fetched = 1.0  # share of A a tile fetches through the cache
    if a_on_chip:  # resident m-tile x K panel of A; what does not fit SRAM spills
        resident = rows * k_slice * b
        room = hw.sram_bytes() - STAGES * tn * tk * b
        a_fetched = np.clip(1.0 - room / resident, 0.0, 1.0)
        staging = STAGES * tn * tk * b + resident
    # Operand feed from the shared cache. With cluster multicast (Hopper and later, when the
    # library uses it) the c tiles of a cluster along m share their B panel: each loads 1/c of
    # it and multicasts it to the others (a cluster is launched whole, so this holds for a
    # lone tile too: its partner, past the edge, still loads its share).
    library = hw.library()
    c = hw.cluster_size if library.multicast else 1
    feed = (cols / c + a_fetched * rows) * tk * k_steps * b
    compute_s = np.maximum(arithmetic_s, feed / hw.unit_feed_bps())

    # The output tiles one wave runs form a footprint of about sqrt(active) row panels x as many
    # column panels (widened along m when n has fewer tiles), which share operands through the
    # cache. The grid is swept footprint by footprint: A is read once per column group, B once
    # per row group. Edge padding is zero-filled, not fetched, so each read is the operand itself.
    per_split = active / split
    if batched:  # a wave's footprint lies within one GEMM of the batch
        per_split = np.minimum(per_split, m_tiles * n_tiles)
    panel_rows = np.minimum(m_tiles, np.ceil(np.sqrt(per_split)))
    panel_cols = np.minimum(n_tiles, np.ceil(per_split / panel_rows))
    panel_rows = np.minimum(m_tiles, np.maximum(panel_rows, np.ceil(per_split / panel_cols)))
    a_ideal, b_ideal = M * K * b, N * K * b
    a_read = np.ceil(n_tiles / panel_cols) * a_ideal
    b_read = np.ceil(m_tiles / panel_rows) * b_ideal
    cached = batches * (a_ideal + b_ideal) <= hw.shared_cache_mib * 2**20 / 2
    a_read = np.where(cached, a_ideal, a_read)  # per GEMM of the batch from here on
    b_read = np.where(cached, b_ideal, b_read)

    spill = np.zeros_like(a_read)
    if a_on_chip:  # the spilled share of A is written out once and read back like an input
        spill = a_fetched * ((0.0 if a_written else a_ideal) + a_read)
        a_read = np.zeros_like(a_read)
    # A wave waits for its full tiles. A-side traffic (A and its spill) is cut along m and
    # shared by every n-tile of those rows; B-side traffic is cut along n and shared along m.
    m_full, n_full = M / rows, N / cols
    tile_reads = (a_read + spill) / (m_full * n_tiles * split) + b_read / (m_tiles * n_full * split)
    full_tiles = m_full * n_full * split
    if batched:  # every GEMM of the batch moves its own operands
        a_read, b_read, spill = a_read * batches, b_read * batches, spill * batches
        full_tiles = full_tiles * batches
    out = batches * M * N * b * out_fraction
    reads = a_read + b_read + spill
    time, memory_bound, writes = _split_waves(
        hw, tiles, split, compute_s, arithmetic_s, reads, out, batches * M * N, tile_reads,
        full_tiles, library, prologue_fill_s(hw, K if np.all(split == 1) else k_slice),
    )  # fmt: skip
    if library.schedule == "stream-k":  # unsplit tiles: iterations shared out over the units
        fill = prologue_fill_s(hw, K)
        sk_time, sk_bound, fixup = stream_k_schedule(
            hw, tiles, k_steps, compute_s, arithmetic_s, tile_reads, out / full_tiles,
            tm * tn * PARTIAL_BYTES, library, fill,
        )  # fmt: skip
        unsplit = split == 1
        time = np.where(unsplit, sk_time, time)
        memory_bound = np.where(unsplit, sk_bound, memory_bound)
        writes = np.where(unsplit, out + fixup, writes)
    time = time + library.fixed_cycles / (hw.clock_ghz * 1e9 * hw.clock_scale)
    return PhaseCost(
        time_us=time * 1e6,
        memory_bound=memory_bound,
        hbm_bytes=reads + writes,
        spill_bytes=spill,
        exec_flops=tile_flops * tiles,
        sram_bytes=staging + 0.0 * M,
    )


def fused_gemm_phase(
    hw: HardwareEnvelope,
    dtype: str,
    tokens,
    n: float,
    k: float,
    row_blocks,
    rows,
    chunk,
    chunks,
    *,
    out_fraction: float = 1.0,
) -> PhaseCost:
    """Cost of C[tokens, n] = A @ B[k, n] run inside the tiles of the op that produced A on chip.

    The producer's tiles cut A into `row_blocks` x `chunks` pieces of `rows` x `chunk` (all (P,)
    arrays); no tile can see another's piece (tiles of one kernel are unordered), so each tile
    multiplies its own piece by the matching `chunk` rows of B and writes fp32 partials of its
    rows x n output, which a merge pass sums (split-K over the producer's chunks). B's slice is
    fed into every tile through the unit's port; across row blocks B is re-read, once per wave's
    row blocks (the wave shares a slice through the cache), and from HBM unless B fits half the
    shared cache (then once). The MACs run on the rows padded to the granule.
    Returns (P, 1) arrays like gemm_phase (model/compiler/README.md "Fusion and spill").
    """
    b = hw.dtype_bytes(dtype)
    g = hw.tile_granule
    blocks, rows, chunk, chunks = (_col(v) for v in (row_blocks, rows, chunk, chunks))
    tiles = blocks * chunks
    padded = np.ceil(rows / g) * g
    arithmetic_s = 2.0 * padded * chunk * n / hw.unit_flops(dtype)
    compute_s = np.maximum(arithmetic_s, chunk * n * b / hw.unit_feed_bps())
    weight = k * n * b
    active = np.minimum(tiles, hw.units_per_core)
    panel_rows = np.minimum(blocks, np.ceil(np.sqrt(active)))
    cached = weight <= hw.shared_cache_mib * 2**20 / 2
    reads = np.where(cached, weight, weight * np.ceil(blocks / panel_rows))
    out_elements = _col(tokens) * n
    time, memory_bound, writes = _split_waves(
        hw, tiles, chunks, compute_s, arithmetic_s, reads, out_elements * b * out_fraction,
        out_elements,
    )  # fmt: skip
    staging = STAGES * min(n, 8 * g) * 4 * g * b  # B streamed in 8 x 4 granule blocks
    return PhaseCost(
        time_us=time * 1e6,
        memory_bound=memory_bound,
        hbm_bytes=reads + writes,
        spill_bytes=np.zeros_like(reads),
        exec_flops=2.0 * padded * chunk * n * tiles,
        sram_bytes=padded * chunk * b + staging,
    )


def attention_phase(
    hw: HardwareEnvelope,
    dtype: str,
    batch,
    q_len,
    kv_len,
    heads,
    kv_heads,
    head_dim,
    causal: bool,
    candidates: np.ndarray,
    *,
    q_in_hbm: bool = True,
    o_to_hbm: bool = True,
    pack_query_heads=True,
    per_point: bool = False,
    precision: type = np.float64,
    packed_wave_cycles: float = 0.0,
    packed_fixed_cycles: float = 0.0,
    per_head_fixed_cycles: float = 0.0,
) -> PhaseCost:
    """Cost of flash attention for each point and candidate tile [q, kv, split].

    batch, q_len, kv_len, heads, kv_heads, head_dim: scalars or (P,) arrays.
    Query rows of one KV head are packed into one tile when they fit (decode with grouped-query
    heads); otherwise each tile holds q query rows of one head. K and V stream through in
    kv-long blocks (causal prefill visits on average half the keys), each KV split writes fp32
    partial outputs that are read back and merged (`pack_query_heads=False`: one head per tile,
    as simple per-(request, head) decode kernels do). K/V are read from HBM once per batch entry
    and KV head (re-reads by other query tiles hit the shared cache).
    q_in_hbm / o_to_hbm: False when the queries come from / the output goes to another op of
    the same kernel, on chip. per_point, precision: as for gemm_phase.
    pack_query_heads: a bool or a (P, 1) bool array (the kernel a library picks per point).
    packed_wave_cycles / packed_fixed_cycles: extra cycles a packed grouped-query kernel pays
        per wave and per op (library.DecodeAttentionKernel; 0 for compiler-generated kernels).
    per_head_fixed_cycles: extra cycles per op of a decode point the per-(request, head)
        kernel runs (library.MHA_FIXED_CYCLES for TensorRT-LLM's masked MHA; 0 otherwise).
    """
    b = hw.dtype_bytes(dtype)
    g = hw.tile_granule
    B, Q, KV = (_col(v).astype(precision) for v in (batch, q_len, kv_len))
    heads, kv_heads, head_dim = (_col(v).astype(precision) for v in (heads, kv_heads, head_dim))
    table = np.asarray(candidates, dtype=precision)
    tq, tkv, split = (table[:, i][:, None] if per_point else table[:, i][None, :]
                      for i in range(3))  # fmt: skip
    group = heads / kv_heads
    packed = (group * Q <= tq) & pack_query_heads
    rows = np.where(packed, np.ceil(group * Q / g) * g, np.minimum(tq, np.ceil(Q / g) * g))
    useful_rows = np.where(packed, group * Q, np.minimum(tq, Q))
    tiles = np.where(packed, B * kv_heads, B * heads * np.ceil(Q / tq)) * split
    kv_blocks = np.ceil(KV / tkv)
    if causal:
        visited = np.minimum(kv_blocks, np.ceil((np.ceil(Q / tq) + 1) / 2 * tq / tkv))
    else:
        visited = kv_blocks
    visited = np.ceil(visited / split) * tkv

    tile_flops = 4.0 * rows * visited * head_dim
    softmax_s = useful_rows * visited * SOFTMAX_OPS_PER_SCORE / hw.unit_vector_flops()
    arithmetic_s = tile_flops / hw.unit_flops(dtype) + softmax_s
    feed = (2.0 * visited + useful_rows) * head_dim * b
    compute_s = np.maximum(arithmetic_s, feed / hw.unit_feed_bps())

    q_bytes = B * Q * heads * head_dim * b
    kv_bytes = B * KV * kv_heads * head_dim * 2.0 * b
    reads = kv_bytes + (q_bytes if q_in_hbm else 0.0)
    out = q_bytes if o_to_hbm else 0.0 * q_bytes
    time, memory_bound, writes = _split_waves(
        hw, tiles, split, compute_s, arithmetic_s, reads, out, B * Q * heads * head_dim
    )
    cycle_s = 1.0 / (hw.clock_ghz * 1e9 * hw.clock_scale)
    grouped = packed & (group > 1)
    if packed_wave_cycles or packed_fixed_cycles:  # the packed kernel's own fixed work
        waves = np.ceil(tiles / hw.units_per_core)
        extra = (packed_wave_cycles * waves + packed_fixed_cycles) * cycle_s
        time = time + np.where(grouped, extra, 0.0)
    if per_head_fixed_cycles and not causal:  # the per-head decode kernel's own fixed work
        time = time + np.where(grouped, 0.0, per_head_fixed_cycles * cycle_s)
    return PhaseCost(
        time_us=time * 1e6,
        memory_bound=memory_bound,
        hbm_bytes=reads + writes,
        spill_bytes=np.zeros_like(reads + writes),
        exec_flops=tile_flops * tiles,
        sram_bytes=(rows + STAGES * 2 * tkv) * head_dim * b + 0.0 * B,
    )


def resident_bytes(hw: HardwareEnvelope) -> float:
    """Bytes of a stream the shared cache keeps, the same half-cache rule as every cache decision
    of the model (A100: 20 MB of the 40 MB L2; each of its two partitions caches the lines its
    own GPCs' SMs access, so a stream read by every SM may hold a copy in both, NVIDIA A100
    Tensor Core GPU Architecture whitepaper, 2020, "L2 cache")."""
    return hw.shared_cache_mib * 2**20 / 2


def deferred_write_bytes(hw: HardwareEnvelope, reads, writes) -> np.ndarray:
    """Bytes of a streaming kernel's writes still dirty in a write-back shared cache when it
    ends: the cache holds the last `resident_bytes` of the kernel's traffic (least recently used
    lines go first), and writes are spread evenly over the stream, so that share of the writes,
    writes x min(1, resident / (reads + writes)). They reach HBM during later kernels."""
    reads, writes = np.asarray(reads, dtype=float), np.asarray(writes, dtype=float)
    total = reads + writes
    cache = resident_bytes(hw)
    share = np.divide(cache, total, out=np.ones_like(total), where=total > cache)
    return writes * np.minimum(1.0, share)


def elementwise_phase(
    hw: HardwareEnvelope,
    read_bytes,
    write_bytes,
    flops,
    *,
    standalone: bool,
    dependent_passes: int = 1,
    inflight_bytes_per_unit: float = np.inf,
    warm_cache: bool | np.ndarray = False,
    write_back: bool | np.ndarray = False,
) -> PhaseCost:
    """Cost of a streaming elementwise op: bytes at the achievable rate or FLOPs at vector rate.

    The stream takes the slowest of three limits: every byte passes the shared cache (its feed
    rate); the bytes HBM must move at the core's HBM rate; and Little's law on the loads in
    flight (units x inflight / latency, a cache hit returning `CACHE_HIT_SPEEDUP` sooner).

    standalone: the op is its own kernel; each of its `dependent_passes` after the first waits
        one pipeline fill (a norm reads its row, reduces, then normalizes: two passes). Fused
        into a producer it streams inside the producer's epilogue and waits for nothing.
    inflight_bytes_per_unit: bytes one unit keeps in flight; by Little's law the op cannot
        stream faster than units x inflight / fill latency. Compiler-generated kernels stage
        whole tiles (unbounded here); simple hand-written kernels with scalar loads do not.
    warm_cache: (P, 1) or scalar bool: the inputs were just written by the kernel before this
        one (a measurement running a layer's kernels in sequence), so they are read from the
        shared cache when this op's traffic fits half of it (`resident_bytes`; all or nothing,
        as for a cyclic stream through an LRU cache), else from HBM.
    write_back: (P, 1) or scalar bool: the shared cache is write-back and the next kernel is
        another op, so the dirty lines among the last `resident_bytes` of this op's traffic
        stay in the cache when it ends and are written to HBM during later kernels; only the
        rest of its writes cost HBM time here (`deferred_write_bytes`).
    """
    reads, writes, work = _col(read_bytes), _col(write_bytes), _col(flops)
    total = reads + writes
    vector = hw.unit_vector_flops() * hw.units_per_core
    hit = np.asarray(warm_cache) & (total <= resident_bytes(hw))
    fill = hw.fill_s()
    # Little's law: bytes in flight / latency; a cache hit returns sooner.
    latency = np.where(hit, fill / CACHE_HIT_SPEEDUP, fill)
    inflight_s = total * latency / (hw.units_per_core * inflight_bytes_per_unit)
    paid = writes
    if np.any(write_back):
        paid = writes - np.where(write_back, deferred_write_bytes(hw, reads, writes), 0.0)
    hbm = np.where(hit, 0.0, reads) + paid if np.any(hit) else reads + paid
    memory_s = np.maximum.reduce(
        [
            total / (hw.unit_feed_bps() * hw.units_per_core),
            hbm / hw.core_hbm_bps(),
            inflight_s,
        ]
    )
    compute_s = work / vector
    # The first pass's round trip hides inside the kernel's device floor; each later pass waits.
    time = np.maximum(memory_s, compute_s) + ((dependent_passes - 1) * fill if standalone else 0.0)
    return PhaseCost(
        time_us=time * 1e6,
        memory_bound=memory_s >= compute_s,
        hbm_bytes=hbm,
        spill_bytes=np.zeros_like(total),
        exec_flops=work + 0.0 * total,
        sram_bytes=np.zeros_like(total),
    )
