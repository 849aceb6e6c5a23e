"""What retuning costs: compile time and device memory of the kernels a compiled bucket adds.

Mechanisms (README "Retuning cost"):

* Compile time. The packet's `fallback.compile_stall_ms` is the measured JIT time of one new
  shape on the generic path, which compiles one kernel per op of the block (it is unfused). So
  one kernel compiles in `compile_stall_ms / ops`. A compiled bucket captures one graph per
  batch size 1..max_batch (as the service table tunes them), each with one kernel per fusion
  group; layers share kernels. A bucket therefore costs `groups x max_batch` kernels and
  `groups x max_batch x compile_stall_ms / ops` ms. Autotuning searches beyond one compile are
  not in the packet and not counted.
* Memory. Each kernel's binary takes `KERNEL_BINARY_BYTES` (an assumption, stated below). A
  static-shape graph owns buffers for the activations that cross kernel boundaries at its
  shape: every tensor of one layer written by one kernel and read by another, plus the block's
  input and output, at the largest batch (smaller batch sizes fit inside the same pool; layers
  reuse the buffers). The KV cache is per request and belongs to no bucket. This is an upper
  bound: it assumes no reuse among one layer's intermediates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from model.compiler.blocks import CACHE_TENSORS, OPS, BlockSpec, block_outputs
from model.compiler.fusion import fusion_groups
from model.compiler.op_sizes import tensor_bytes

KERNEL_BINARY_BYTES = 256 * 1024
"""Device code of one compiled kernel, bytes. Assumption, not measured here: tuned GEMM and
attention kernels specialised for one shape are typically a few hundred KiB of device code."""


@dataclass(frozen=True)
class BucketCosts:
    """The retuning cost of compiling some buckets; every array is (buckets,).

    Attributes:
        buckets: compiled seq_len of each bucket (tokens).
        kernels: kernels compiled for the bucket (fusion groups x batch sizes).
        compile_ms: compile time of the bucket, ms.
        binary_bytes: device code of the bucket's kernels, bytes.
        workspace_bytes: activation buffers the bucket's graphs own, bytes.
    """

    buckets: np.ndarray
    kernels: np.ndarray
    compile_ms: np.ndarray
    binary_bytes: np.ndarray
    workspace_bytes: np.ndarray

    @property
    def memory_bytes(self) -> np.ndarray:
        """Binary plus workspace bytes of each bucket."""
        return self.binary_bytes + self.workspace_bytes


def boundary_tensors(block: BlockSpec, fusion: str | Sequence[Sequence[str]]) -> tuple[str, ...]:
    """Activation tensors of one layer that live in HBM between kernels (KV cache excluded):
    the block input, tensors read by a kernel other than their producer's, the block output."""
    groups = fusion_groups(block, fusion)
    group_of = {op: i for i, g in enumerate(groups) for op in g}
    crossing = {"x", *block_outputs(block)}
    for op in block.op_names:
        for tensor in OPS[op].writes:
            readers = [r for r in block.op_names if tensor in OPS[r].reads]
            if any(group_of[r] != group_of[op] for r in readers):
                crossing.add(tensor)
    return tuple(sorted(crossing - set(CACHE_TENSORS)))


def compile_ms_per_kernel(block: BlockSpec, compile_stall_ms: float) -> float:
    """Compile time of one kernel, ms: the measured JIT stall of one shape over the generic
    path's kernels (one per op)."""
    return float(compile_stall_ms) / len(block.op_names)


def bucket_costs(
    block: BlockSpec,
    fusion: str | Sequence[Sequence[str]],
    buckets: Sequence[int],
    max_batch: int,
    compile_stall_ms: float,
) -> BucketCosts:
    """Compile time and memory of compiling each of `buckets` (seq_len, tokens) for the plan
    (vectorized over buckets)."""
    shapes = np.asarray(buckets, dtype=np.float64)
    groups = len(fusion_groups(block, fusion))
    kernels = np.full(len(shapes), groups * int(max_batch), dtype=np.int64)
    batch = np.full(len(shapes), float(max_batch))
    workspace = np.zeros(len(shapes))
    for tensor in boundary_tensors(block, fusion):
        workspace = workspace + tensor_bytes(block, tensor, batch, shapes)
    return BucketCosts(
        buckets=shapes.astype(np.int64),
        kernels=kernels,
        compile_ms=kernels * compile_ms_per_kernel(block, compile_stall_ms),
        binary_bytes=kernels * float(KERNEL_BINARY_BYTES),
        workspace_bytes=workspace,
    )


@dataclass(frozen=True)
class CompiledPlan:
    """What a configuration compiles: the block, its fusion, buckets, batch sizes, pinned tiles.

    Attributes:
        block: the block (its dtype included).
        fusion: preset name or op groups.
        buckets: compiled seq_len buckets, ascending.
        max_batch: batch sizes 1..max_batch are captured per bucket.
        pinned_tiles: op -> pinned tile (any comparable value); autotuned ops are absent.
    """

    block: BlockSpec
    fusion: str | tuple[tuple[str, ...], ...]
    buckets: tuple[int, ...]
    max_batch: int
    pinned_tiles: tuple[tuple[str, str], ...] = ()


def retune_cost(
    before: CompiledPlan,
    after: CompiledPlan,
    compile_stall_ms: float,
    *,
    retune_all: bool = False,
) -> dict:
    """The cost of going from plan `before` to plan `after` (kernel compile time per the
    module docstring, from the measured `compile_stall_ms`).

    Buckets new in `after` compile whole. Buckets kept are recompiled for the fusion groups
    whose kernels change: all of them when the block, fusion or batch sizes change or with
    `retune_all` (a recalibrated envelope re-picks every tile), else the groups holding an op
    whose pinned tile changes. Plain dict: added_buckets, removed_buckets, recompiled_buckets,
    kernels, compile_ms, memory_bytes, binary_bytes, workspace_bytes (memory figures are after
    minus before: negative when buckets go).
    """
    old, new = set(before.buckets), set(after.buckets)
    added = sorted(new - old)
    groups = fusion_groups(after.block, after.fusion)
    same = (
        before.block == after.block
        and fusion_groups(before.block, before.fusion) == groups
        and before.max_batch == after.max_batch
    )
    if retune_all or not same:
        regroup = len(groups)
    else:
        pinned_before, pinned_after = dict(before.pinned_tiles), dict(after.pinned_tiles)
        changed = {op for op in set(pinned_before) | set(pinned_after)
                   if pinned_before.get(op) != pinned_after.get(op)}  # fmt: skip
        regroup = sum(1 for g in groups if changed & set(g))
    rebuilt = sorted(old & new) if regroup else []
    redo_kernels = len(rebuilt) * regroup * int(after.max_batch)

    def costs(plan: CompiledPlan, shapes) -> BucketCosts:
        return bucket_costs(plan.block, plan.fusion, shapes, plan.max_batch, compile_stall_ms)

    add, now, was = costs(after, added), costs(after, sorted(new)), costs(before, sorted(old))
    per_kernel = compile_ms_per_kernel(after.block, compile_stall_ms)

    def delta(name: str) -> float:
        return float(np.sum(getattr(now, name)) - np.sum(getattr(was, name)))

    return {
        "added_buckets": added,
        "removed_buckets": sorted(old - new),
        "recompiled_buckets": rebuilt,
        "kernels": int(np.sum(add.kernels)) + redo_kernels,
        "compile_ms": float(np.sum(add.compile_ms)) + redo_kernels * per_kernel,
        "memory_bytes": delta("memory_bytes"),
        "binary_bytes": delta("binary_bytes"),
        "workspace_bytes": delta("workspace_bytes"),
    }
