"""Evaluate a fusion and tile plan: the kernels a block launches and what each one costs.

`evaluate_plan` runs every kernel of a plan at P points (batch size b, runtime shape s) at once.
Inside a kernel the ops run one after another as phases (see model.compiler.kernels); a tensor produced
by an earlier op of the same kernel stays on chip, except keys and values (the KV cache) and
tensors read by later kernels or leaving the block. Each GEMM and attention op gets its tile
from the plan or, for ops the plan leaves out, from an autotuning search per point (the tile
minimizing that op's phase time in its kernel), or the compiled tiles given (`compiled_tiles`).
A GEMM whose A operand another tiled op of its kernel produced runs inside that op's tiles,
split over them (model.compiler.fused); its tile is derived from the producer's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np

from model.compiler.autotune import best_attention, best_gemm
from model.compiler.blocks import (
    CACHE_TENSORS,
    OPS,
    BlockSpec,
    block_outputs,
    gemm_dims,
    weight_bytes,
)
from model.compiler.fused import producer_grid, tiled_producer
from model.compiler.fusion import Plan
from model.compiler.hardware import HardwareEnvelope
from model.compiler.kernels import (
    PhaseCost,
    attention_phase,
    elementwise_phase,
    fused_gemm_phase,
    gemm_phase,
)
from model.compiler.op_sizes import attention_dims, op_flops, tensor_bytes, tokens
from model.compiler.tiles import (
    AttentionTile,
    GemmTile,
    Tile,
    default_attention_tile,
    default_gemm_tile,
)


@dataclass(frozen=True)
class KernelCost:
    """One kernel of a plan at P points; every array is (P,) and counts one pass of the block.

    Attributes:
        ops: the op group the kernel runs.
        tiles: op -> (P, 4) [m, n, k, split] (GEMM) or (P, 3) [q, kv, split] (attention) tile
            each point runs with.
        launch_us: host launch overhead (plus extra dispatch on the generic path), us.
        floor_us: device minimum-kernel time, us.
        compute_us: time of the kernel's compute-bound phases, us.
        memory_us: time of its memory-bound phases (spill traffic included), us.
        hbm_bytes: bytes read from and written to HBM.
        memory_bound_bytes: the part of hbm_bytes moved by memory-bound phases.
        spill_bytes: the part of hbm_bytes caused by on-chip working sets overflowing SRAM.
        flops: useful FLOPs (no padding).
        exec_flops: FLOPs executed, tile padding included.
        consumed_bytes: operand bytes the ops consume (each multiply-accumulate reads two).
        sram_bytes: largest SRAM one unit holds in any phase, bytes.
        peak_gbs: highest HBM demand of any phase (its bytes over its time), GB/s.
    """

    ops: tuple[str, ...]
    tiles: dict[str, np.ndarray]
    launch_us: np.ndarray
    floor_us: np.ndarray
    compute_us: np.ndarray
    memory_us: np.ndarray
    hbm_bytes: np.ndarray
    memory_bound_bytes: np.ndarray
    spill_bytes: np.ndarray
    flops: np.ndarray
    exec_flops: np.ndarray
    consumed_bytes: np.ndarray
    sram_bytes: np.ndarray
    peak_gbs: np.ndarray

    @property
    def device_us(self) -> np.ndarray:
        """Device time: floor plus phases, us."""
        return self.floor_us + self.compute_us + self.memory_us

    @property
    def time_us(self) -> np.ndarray:
        """Host launch plus device time, us."""
        return self.launch_us + self.device_us

    def bound(self) -> np.ndarray:
        """(P,) str: what limits the kernel: launch, compute, memory or spill."""
        fixed = self.launch_us + self.floor_us
        parts = np.stack([fixed, self.compute_us, self.memory_us])
        names = np.array(["launch", "compute", "memory"])[np.argmax(parts, axis=0)]
        spill = (names == "memory") & (self.spill_bytes >= 0.5 * self.memory_bound_bytes)
        return np.where(spill & (self.spill_bytes > 0), "spill", names)

    def average_gbs(self) -> np.ndarray:
        """Average HBM demand over the kernel's device time, GB/s (peak_gbs is its densest
        phase: the burst rate a contention model should see)."""
        return self.hbm_bytes / np.maximum(self.device_us, 1e-9) * 1e-3

    def reuse_ratio(self) -> np.ndarray:
        """On-chip reuse: operand bytes consumed by compute / bytes fetched from HBM."""
        return self.consumed_bytes / np.maximum(self.hbm_bytes, 1.0)


def _fixed_tile(
    block: BlockSpec, hw: HardwareEnvelope, op: str, tile: Tile | None, untuned: bool
) -> np.ndarray | None:
    """The single candidate row of an explicit or untuned tile; None: autotune."""
    b = block.bytes_per_element
    if OPS[op].kind == "gemm":
        tile = tile or (default_gemm_tile(hw, b) if untuned else None)
        return None if tile is None else np.array([[tile.m, tile.n, tile.k, tile.split]], float)
    tile = tile or (default_attention_tile(hw, block.head_dim, b) if untuned else None)
    return None if tile is None else np.array([[tile.q, tile.kv, tile.split]], float)


def _fixed(cost: PhaseCost, row: np.ndarray) -> tuple[PhaseCost, np.ndarray]:
    points = cost.time_us.shape[0]
    return cost.pick(np.zeros(points, dtype=np.int64)), np.repeat(row, points, axis=0)


@dataclass(frozen=True)
class _Context:
    """What an op's phase needs to know about its kernel and the points it runs at."""

    block: BlockSpec
    hw: HardwareEnvelope
    tiles: Mapping[str, Tile]
    untuned: bool
    b: np.ndarray
    s: np.ndarray
    group: tuple[str, ...]
    produced: frozenset[str]  # tensors written by earlier ops of the kernel (on chip)
    escaping: frozenset[str]  # tensors of the kernel that must reach HBM
    chosen: Mapping[str, np.ndarray]  # tile rows (P, k) of the kernel's earlier tiled ops
    fixed_rows: Mapping[str, np.ndarray]  # op -> (P, k) tile rows compiled already (no search)

    def bytes_of(self, tensors) -> np.ndarray:
        """Total bytes of some activation tensors at every point."""
        total = np.zeros(len(self.b))
        for t in tensors:
            total = total + tensor_bytes(self.block, t, self.b, self.s)
        return total


def _gemm(ctx: _Context, op: str) -> tuple[PhaseCost, np.ndarray]:
    spec, block, hw = OPS[op], ctx.block, ctx.hw
    n, k = gemm_dims(block, op)
    widths = {t: block.tensor_width(t) for t in spec.writes}
    a_tensor = spec.reads[0]
    out_fraction = sum(w for t, w in widths.items() if t in ctx.escaping) / sum(widths.values())
    before = ctx.group[: ctx.group.index(op)]
    producer = tiled_producer(block, before, a_tensor) if a_tensor in ctx.produced else None
    if producer is not None:  # A is spread over another tiled op's tiles: split-K inside them
        grid = producer_grid(block, producer[0], ctx.chosen[producer[0]], producer[1],
                             ctx.b, ctx.s)  # fmt: skip
        m = tokens(block, ctx.b, ctx.s)
        cost = fused_gemm_phase(hw, block.dtype, m, n, k, grid.row_blocks, grid.rows,
                                grid.chunk, grid.chunks, out_fraction=out_fraction)  # fmt: skip
        padded = np.ceil(grid.rows / hw.tile_granule) * hw.tile_granule
        rows = np.stack([padded, np.full_like(padded, n), grid.chunk, grid.chunks], axis=1)
        return cost.pick(np.zeros(len(ctx.b), dtype=np.int64)), rows
    context = {
        "a_on_chip": a_tensor in ctx.produced,
        "a_written": a_tensor in ctx.produced and a_tensor in ctx.escaping,
        "out_fraction": out_fraction,
    }
    if op in ctx.fixed_rows:  # compiled tiles, one per point
        rows = ctx.fixed_rows[op]
        m = tokens(block, ctx.b, ctx.s)
        cost = gemm_phase(hw, block.dtype, m, n, k, rows, per_point=True, **context)
        return cost.pick(np.zeros(len(m), dtype=np.int64)), rows
    # A GEMM's cost depends on m alone here: evaluate each distinct m once.
    unique_m, inverse = np.unique(tokens(block, ctx.b, ctx.s), return_inverse=True)
    fixed = _fixed_tile(block, hw, op, ctx.tiles.get(op), ctx.untuned)
    if fixed is None:
        cost, rows = best_gemm(hw, block.dtype, unique_m, n, k, **context)
    else:
        cost, rows = _fixed(gemm_phase(hw, block.dtype, unique_m, n, k, fixed, **context), fixed)
    return cost.pick(inverse, columns=False), rows[inverse]


def _attention(ctx: _Context, op: str) -> tuple[PhaseCost, np.ndarray]:
    block, hw = ctx.block, ctx.hw
    q_len, kv_len = attention_dims(block, ctx.s)
    shape = (ctx.b, q_len, kv_len, block.heads, block.kv_heads, block.head_dim,
             block.phase == "prefill")  # fmt: skip
    context = {"q_in_hbm": "q_rot" not in ctx.produced, "o_to_hbm": "attn_out" in ctx.escaping}
    if op in ctx.fixed_rows:  # compiled tiles, one per point
        rows = ctx.fixed_rows[op]
        cost = attention_phase(hw, block.dtype, *shape, rows, per_point=True, **context)
        return cost.pick(np.zeros(len(rows), dtype=np.int64)), rows
    fixed = _fixed_tile(block, hw, op, ctx.tiles.get(op), ctx.untuned)
    if fixed is None:
        return best_attention(hw, block.dtype, *shape, **context)
    return _fixed(attention_phase(hw, block.dtype, *shape, fixed, **context), fixed)


def _elementwise(ctx: _Context, op: str) -> PhaseCost:
    spec, block = OPS[op], ctx.block
    reads = ctx.bytes_of(t for t in spec.reads if t not in ctx.produced)
    reads = reads + weight_bytes(block, op)
    writes = ctx.bytes_of(t for t in spec.writes if t in ctx.escaping)
    # A norm needs whole rows: behind a tiled op of the same kernel its input is spread over
    # tiles and makes a round trip through HBM (only the read back if it leaves anyway).
    before = ctx.group[: ctx.group.index(op)]
    spill_read = spill_write = np.zeros(len(ctx.b))
    if spec.row_reduction and any(OPS[p].kind != "elementwise" for p in before):
        on_chip = [t for t in spec.reads if t in ctx.produced]
        spill_read = ctx.bytes_of(on_chip)
        spill_write = ctx.bytes_of(t for t in on_chip if t not in ctx.escaping)
    cost = elementwise_phase(
        ctx.hw,
        reads + spill_read,
        writes + spill_write,
        op_flops(block, op, ctx.b, ctx.s),
        standalone=len(ctx.group) == 1,
        dependent_passes=2 if spec.row_reduction else 1,
    )
    return replace(cost.pick(np.zeros(len(ctx.b), dtype=np.int64)),
                   spill_bytes=spill_read + spill_write)  # fmt: skip


def evaluate_plan(
    block: BlockSpec,
    hw: HardwareEnvelope,
    groups: Plan,
    tiles: Mapping[str, Tile],
    b: np.ndarray,
    s: np.ndarray,
    *,
    untuned: bool = False,
    dispatch_us: float = 0.0,
    compiled_tiles: Mapping[str, np.ndarray] | None = None,
    memo: KernelMemo | None = None,
) -> list[KernelCost]:
    """The kernels of plan `groups` at points (b[i], s[i]); costs per pass of the block.

    tiles: validated explicit tiles (see tiles.resolve_tiles); other GEMM/attention ops are
        autotuned per point, or take the untuned default tile when `untuned`.
    dispatch_us: extra host dispatch per kernel (the generic path), us.
    compiled_tiles: op -> (P, 4) or (P, 3) tile rows per point, as an earlier evaluation chose
        them (KernelCost.tiles): those ops are costed with these tiles, not tuned again (how
        the compiled plan behaves on a device whose state differs from the one it was tuned
        on, e.g. a smaller share of the shared cache).
    memo: kernels costed by earlier calls, reused where every input of a kernel is the same
        (`KernelMemo`); the kernels it hands out are read-only and shared. None: cost all.
    """
    b = np.asarray(b, dtype=np.float64).ravel()
    s = np.asarray(s, dtype=np.float64).ravel()
    group_of = {op: i for i, g in enumerate(groups) for op in g}
    always = set(block_outputs(block)) | set(CACHE_TENSORS)
    fixed_rows = compiled_tiles or {}
    common = None if memo is None else memo.common_key(block, hw, b, s, untuned, dispatch_us)
    kernels = []
    for index, group in enumerate(groups):
        written = {t for op in group for t in OPS[op].writes}
        escaping = frozenset(
            t for t in written
            if t in always or any(group_of[r] != index for r in block.op_names
                                  if t in OPS[r].reads)
        )  # fmt: skip
        if memo is None:
            kernels.append(_kernel(block, hw, tiles, untuned, dispatch_us, b, s, group,
                                   escaping, fixed_rows))  # fmt: skip
            continue
        key = (common, tuple(group), escaping, *memo.group_key(group, tiles, fixed_rows))
        found = memo.get(key)
        if found is None:
            found = memo.put(key, _kernel(block, hw, tiles, untuned, dispatch_us, b, s, group,
                                          escaping, fixed_rows))  # fmt: skip
        kernels.append(found)
    return kernels


def _kernel(
    block: BlockSpec,
    hw: HardwareEnvelope,
    tiles: Mapping[str, Tile],
    untuned: bool,
    dispatch_us: float,
    b: np.ndarray,
    s: np.ndarray,
    group: Sequence[str],
    escaping: frozenset[str],
    fixed_rows: Mapping[str, np.ndarray],
) -> KernelCost:
    """One kernel of a plan: its ops' phases one after another, tensors produced by earlier
    ops of the kernel on chip (`evaluate_plan`). Reads nothing but its arguments (what makes
    `KernelMemo`'s reuse exact)."""
    produced: set[str] = set()
    phases, chosen = [], {}
    flops = consumed = np.zeros(len(b))
    for op in group:
        ctx = _Context(block, hw, tiles, untuned, b, s, group, frozenset(produced),
                       escaping, dict(chosen), fixed_rows)  # fmt: skip
        spec = OPS[op]
        useful = op_flops(block, op, b, s)
        flops = flops + useful
        if spec.kind == "elementwise":
            phases.append(_elementwise(ctx, op))
            consumed = consumed + ctx.bytes_of(spec.reads)
        else:
            cost, chosen[op] = (_gemm if spec.kind == "gemm" else _attention)(ctx, op)
            phases.append(cost)
            consumed = consumed + useful * block.bytes_per_element  # 2 operands per MAC
        produced.update(spec.writes)
    return _combine(hw, group, chosen, phases, flops, consumed, dispatch_us)


class KernelMemo:
    """Kernel costs kept between `evaluate_plan` calls, for a caller that costs many plans
    differing in a few kernels (the app's Tune step: a tile edit changes one op's kernel, and
    the table's other kernels, and every kernel of its generic path, are those of the plan
    before it).

    A kernel's cost is a pure function of its inputs (`_kernel`): the block, the hardware
    (busy-core share of the cache included), the points, the generic-path switches, its op
    group, which of its tensors escape to HBM, its ops' explicit tiles and compiled tile rows.
    The key holds all of them (arrays by dtype, shape and bytes), so a kept kernel is the one
    the call would compute, bit for bit (tests/compiler/test_kernel_memo.py). Kept kernels
    are frozen (read-only arrays): callers share them. The least recently used go first
    beyond `entries` (a 32-batch x 8-shape kernel is ~40 KB). Thread-safe.

    Attributes:
        hits, misses: kernels reused and costed, for tests and benchmarks.
    """

    def __init__(self, entries: int = 256) -> None:
        self._entries = entries
        self._kept: OrderedDict[Hashable, KernelCost] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @staticmethod
    def common_key(
        block: BlockSpec,
        hw: HardwareEnvelope,
        b: np.ndarray,
        s: np.ndarray,
        untuned: bool,
        dispatch_us: float,
    ) -> Hashable:
        """The part of a kernel's key every kernel of one call shares."""
        return (repr(block), repr(hw), _array_key(b), _array_key(s), untuned, dispatch_us)

    @staticmethod
    def group_key(
        group: Sequence[str], tiles: Mapping[str, Tile], fixed_rows: Mapping[str, np.ndarray]
    ) -> tuple[Hashable, Hashable]:
        """The explicit tiles and compiled tile rows of the group's ops."""
        return (
            tuple((op, repr(tiles.get(op))) for op in group),
            tuple((op, _array_key(fixed_rows[op])) for op in group if op in fixed_rows),
        )

    def get(self, key: Hashable) -> KernelCost | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                self.misses += 1
                return None
            self._kept.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: Hashable, kernel: KernelCost) -> KernelCost:
        """Keep `kernel` (frozen) under `key`; returns the kept kernel."""
        kernel = _frozen(kernel)
        with self._lock:
            self._kept[key] = kernel
            self._kept.move_to_end(key)
            while len(self._kept) > self._entries:
                self._kept.popitem(last=False)
        return kernel


def _array_key(values: np.ndarray) -> tuple:
    values = np.ascontiguousarray(values)
    return (values.dtype.str, values.shape, values.tobytes())


def _frozen(kernel: KernelCost) -> KernelCost:
    """The kernel with every array read-only (copies where the array was a view of another)."""

    def frozen(values: np.ndarray) -> np.ndarray:
        values = np.array(values, copy=True)
        values.flags.writeable = False
        return values

    arrays = {f.name: frozen(getattr(kernel, f.name)) for f in fields(kernel)
              if isinstance(getattr(kernel, f.name), np.ndarray)}  # fmt: skip
    return replace(kernel, tiles={op: frozen(rows) for op, rows in kernel.tiles.items()}, **arrays)


def _combine(
    hw: HardwareEnvelope,
    group: Sequence[str],
    chosen: dict[str, np.ndarray],
    phases: list[PhaseCost],
    flops: np.ndarray,
    consumed: np.ndarray,
    dispatch_us: float,
) -> KernelCost:
    time = np.stack([p.time_us for p in phases])
    memory = np.stack([p.memory_bound for p in phases])
    hbm = np.stack([p.hbm_bytes for p in phases])
    points = time.shape[1]
    return KernelCost(
        ops=tuple(group),
        tiles=chosen,
        launch_us=np.full(points, hw.launch_overhead_us + dispatch_us),
        floor_us=np.full(points, hw.min_kernel_us),
        compute_us=np.sum(np.where(memory, 0.0, time), axis=0),
        memory_us=np.sum(np.where(memory, time, 0.0), axis=0),
        hbm_bytes=hbm.sum(axis=0),
        memory_bound_bytes=np.sum(np.where(memory, hbm, 0.0), axis=0),
        spill_bytes=np.stack([p.spill_bytes for p in phases]).sum(axis=0),
        flops=flops,
        exec_flops=np.stack([p.exec_flops for p in phases]).sum(axis=0),
        consumed_bytes=consumed,
        sram_bytes=np.stack([p.sram_bytes for p in phases]).max(axis=0),
        peak_gbs=np.max(hbm / np.maximum(time, 1e-9), axis=0) * 1e-3,
    )


def tile_label(op: str, row: np.ndarray) -> str:
    """Text form of one chosen tile row of `op` (e.g. `128x128x64` or `q64xkv64/s4`)."""
    if OPS[op].kind == "gemm":
        return GemmTile(*(int(v) for v in row)).label()
    return AttentionTile(*(int(v) for v in row)).label()
