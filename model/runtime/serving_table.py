"""The iteration-time table of a serving engine, from the compile-plan model, built once.

A mixed iteration is one forward pass of the decoder: its token-parallel kernels (norms, QKV,
out, gate/up, down projections, RoPE, residual adds) run over all m = d + p tokens of the batch
(d decode steps, p prefill tokens) and read the weights once; attention runs per sequence, over
each decode sequence's KV length and over the prefill chunk. So the table is separable:

    time(d, kv, p) = lin(m = d + p) + decode_attention(d, kv) + prefill_attention(p)

lin is the compiled plan costed as a prefill pass of m tokens (GEMMs at m rows: the weight
stream is paid once per iteration, which is why a decode step piggybacking on a prefill chunk
is nearly free when the chunk is compute-bound); decode_attention is the plan's attention
kernels in the decode phase at batch d over KV length kv; prefill_attention the same kernels in
the prefill phase over p tokens (causal within the chunk; earlier chunks' KV is not re-read:
a simplification, small while p and the prompt are close). Fused groups that hold attention
are costed whole in the attention terms (their other ops' share then scales with the same
tokens). Times are the plan's launch + compute + memory per pass times `layers`, as in the
dynamic batcher's `ServiceTable` (model/compiler/service_table.py).

Buckets pad up: all counts 1..64, then steps of 2^(1/4) (about 19% apart), as serving engines
capture graphs at a ladder of batch sizes. Cells are evaluated vectorized, once per plan
(`IterationCosts`): the token-parallel and prefill-attention cells in one `evaluate_plan` call,
the decode-attention cells in another, and a table of any extent is gathered from them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from model.compiler.blocks import BlockSpec
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import HardwareEnvelope
from model.compiler.plan import evaluate_plan
from model.compiler.tiles import resolve_tiles
from model.runtime.serving import IterationTable

DENSE_UP_TO = 64
"""Buckets hold every count up to here (decode batches are small and their time is steep)."""
STEP = 2.0**0.25
"""Ratio between buckets above DENSE_UP_TO: padding costs at most 19% of tokens."""


def bucket_edges(largest: int) -> np.ndarray:
    """(E,) int64 ascending bucket edges 1..DENSE_UP_TO, then x STEP, the last >= largest."""
    edges = list(range(1, min(largest, DENSE_UP_TO) + 1))
    while edges[-1] < largest:
        edges.append(min(largest, max(edges[-1] + 1, int(np.ceil(edges[-1] * STEP)))))
    return np.asarray(edges, np.int64)


def prefill_edges(largest: int, compiled: Sequence[int]) -> np.ndarray:
    """(P,) int64 prefill-chunk edges: `bucket_edges(largest)` plus every compiled seq_len
    bucket up to `largest`. A chunk is priced at the smallest edge >= it, and that edge at the
    smallest compiled bucket >= it; with the compiled buckets among the edges, a chunk in
    (b[i-1], b[i]] lands on an edge in (b[i-1], b[i]] and so runs padded to b[i], as the
    engine pads it, and is never padded twice (to a ladder edge past b[i], then to b[i+1]:
    a 1,020-token chunk at seq_len 2,048 instead of 1,024)."""
    ladder = bucket_edges(largest)
    inside = [int(b) for b in compiled if int(b) <= largest]
    return np.union1d(ladder, np.asarray(inside, np.int64)).astype(np.int64)


def _kernel_ms(kernels, layers: int, pick) -> np.ndarray:
    total = np.zeros(len(kernels[0].launch_us))
    for k in kernels:
        if pick("attention" in k.ops):
            total = total + (k.launch_us + k.floor_us + k.compute_us + k.memory_us)
    return total * layers / 1e3


def _attention(has_attention: bool) -> bool:
    return has_attention


def _token_parallel(has_attention: bool) -> bool:
    return not has_attention


class IterationCosts:
    """The iteration-time cells of one compiled plan on one engine, evaluated when first asked
    for and kept, so tables of any extent come from one set of cells.

    Each cell is the plan's cost at one point (a token count for the token-parallel kernels, a
    chunk length for prefill attention, a (decode batch, KV bucket) pair for decode attention)
    and does not depend on which other points are evaluated with it: a table of max_num_seqs S
    and max_tokens T is the cells at its bucket edges, and an edit that raises S or T evaluates
    only the cells not seen yet (the edges below the old extent are shared, so a step adds its
    new last edge and, for S, one decode row). `build_iteration_table` is `table` on fresh
    costs; memoized costs give the same arrays, bit for bit. Thread-safe.

    Attributes:
        evaluated: cells evaluated so far (for tests and benchmarks).
    """

    def __init__(
        self,
        block: BlockSpec,
        hardware: HardwareEnvelope,
        fusion: str | Sequence[Sequence[str]],
        tiles: Mapping | None,
        *,
        longest_sequence: int,
        compiled_shapes: Sequence[int] | None = None,
        dispatch_us: float = 0.0,
    ) -> None:
        if block.kind != "llama-decoder":
            raise ValueError(f"block.kind must be llama-decoder for serving (got {block.kind!r})")
        self._prefill = replace(block, phase="prefill")
        self._decode = replace(block, phase="decode")
        self._hardware = hardware
        self._explicit = resolve_tiles(self._prefill, hardware, tiles)
        self._groups = fusion_groups(self._prefill, fusion)
        self._layers = block.layers
        self._compiled = sorted(compiled_shapes) if compiled_shapes else []
        self._dispatch_us = dispatch_us
        self.longest_sequence = int(longest_sequence)
        self._kv_edges = bucket_edges(self.longest_sequence)
        self._lin: dict[int, float] = {}  # m tokens -> ms of the token-parallel kernels
        self._pre: dict[int, tuple[float, bool]] = {}  # p tokens -> (ms, generic path)
        self._dec = np.zeros((0, len(self._kv_edges)))  # row d - 1: d decode sequences
        self._lock = threading.Lock()
        self.evaluated = 0

    def table(
        self, *, max_num_seqs: int, max_tokens: int, ahead: Sequence[tuple[int, int]] = ()
    ) -> IterationTable:
        """The engine's table for max_num_seqs running sequences and max_tokens prefill tokens
        per iteration (max_num_batched_tokens, or the longest sequence when prompts go whole).
        ahead: other (max_num_seqs, max_tokens) extents whose cells are evaluated in the same
        pass when this one needs any (an arrow step's neighbours: the next step then finds
        its cells kept). What is returned never depends on `ahead`."""
        m_edges, p_edges = self._edges(max_num_seqs, max_tokens)
        with self._lock:
            if self._missing(m_edges, p_edges, max_num_seqs):
                self._reserve([(max_num_seqs, max_tokens), *ahead])
            lin = np.array([self._lin[int(m)] for m in m_edges], dtype=np.float64)
            pre = np.array([self._pre[int(p)][0] for p in p_edges], dtype=np.float64)
            fallback = np.array([self._pre[int(p)][1] for p in p_edges], dtype=bool)
            dec = self._dec[:max_num_seqs].copy()
        return IterationTable(m_edges, lin, self._kv_edges.copy(), dec, p_edges, pre, fallback)

    def reserve(self, extents: Sequence[tuple[int, int]]) -> None:
        """Evaluate, in one pass, every cell the tables of these (max_num_seqs, max_tokens)
        extents need that is not kept yet (for an idle moment: the next edits' tables are
        then gathered without evaluating)."""
        with self._lock:
            self._reserve(extents)

    def _reserve(self, extents: Sequence[tuple[int, int]]) -> None:
        extents = [(max(1, int(s)), max(1, int(t))) for s, t in extents]
        edges = [self._edges(s, t) for s, t in extents]
        self._evaluate(
            np.unique(np.concatenate([m for m, _ in edges])),
            np.unique(np.concatenate([p for _, p in edges])),
            max(s for s, _ in extents),
        )

    def _edges(self, max_num_seqs: int, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
        biggest_p = max(max_tokens, self.longest_sequence)
        return bucket_edges(max_num_seqs + biggest_p), prefill_edges(biggest_p, self._compiled)

    def _missing(self, m_edges: np.ndarray, p_edges: np.ndarray, max_num_seqs: int) -> bool:
        return (
            max_num_seqs > len(self._dec)
            or any(int(m) not in self._lin for m in m_edges)
            or any(int(p) not in self._pre for p in p_edges)
        )

    def _evaluate(self, m_edges: np.ndarray, p_edges: np.ndarray, max_num_seqs: int) -> None:
        m_new = np.asarray([m for m in m_edges if int(m) not in self._lin], np.int64)
        p_new = np.asarray([p for p in p_edges if int(p) not in self._pre], np.int64)
        if len(m_new) or len(p_new):
            lin, pre, fallback = self._prefill_cells(m_new, p_new)
            self._lin.update(zip(m_new.tolist(), lin.tolist(), strict=True))
            self._pre.update(
                zip(p_new.tolist(), zip(pre.tolist(), fallback.tolist(), strict=True), strict=True)
            )
            self.evaluated += len(m_new) + len(p_new)
        have = len(self._dec)
        if max_num_seqs > have:
            d_grid, kv_grid = np.meshgrid(
                np.arange(have + 1, max_num_seqs + 1), self._kv_edges, indexing="ij"
            )
            rows = _kernel_ms(
                evaluate_plan(self._decode, self._hardware, self._groups, self._explicit,
                              d_grid.ravel(), kv_grid.ravel()),
                self._layers, _attention,
            ).reshape(d_grid.shape)  # fmt: skip
            self._dec = np.concatenate([self._dec, rows])
            self.evaluated += rows.size

    def _prefill_cells(self, m: np.ndarray, p: np.ndarray):  # type: ignore[no-untyped-def]
        """(M,) ms of the token-parallel kernels over m tokens, (P,) ms of prefill attention
        over a chunk of p tokens and (P,) whether it takes the generic path. Both are the
        prefill plan at batch 1, so one evaluation costs them (token-parallel kernels at m,
        attention at each chunk's compiled bucket). As the dynamic batcher's service table: a
        chunk runs in the smallest compiled seq_len bucket >= it, padded to it; above the
        largest it runs the generic path (unfused, untuned tiles, extra dispatch) at its own
        length."""
        if self._compiled:
            buckets = np.asarray(self._compiled, np.int64)
            index = np.searchsorted(buckets, p, side="left")
            fallback = index >= len(buckets)
            shape = buckets[index[~fallback]]
        else:
            fallback = np.zeros(len(p), bool)
            shape = p
        points = np.concatenate([m, shape])
        lin, pre = np.zeros(len(m)), np.zeros(len(p))
        if len(points):
            plan = evaluate_plan(self._prefill, self._hardware, self._groups, self._explicit,
                                 np.ones(len(points)), points)  # fmt: skip
            lin = _kernel_ms(plan, self._layers, _token_parallel)[: len(m)]
            pre[~fallback] = _kernel_ms(plan, self._layers, _attention)[len(m) :]
        if fallback.any():
            generic = fusion_groups(self._prefill, "none")
            shape = p[fallback]
            plan = evaluate_plan(
                self._prefill, self._hardware, generic, {}, np.ones(len(shape)), shape,
                untuned=True, dispatch_us=self._dispatch_us,
            )  # fmt: skip
            pre[fallback] = _kernel_ms(plan, self._layers, _attention)
        return lin, pre, fallback


def build_iteration_table(
    block: BlockSpec,
    hardware: HardwareEnvelope,
    fusion: str | Sequence[Sequence[str]],
    tiles: Mapping | None,
    *,
    max_num_seqs: int,
    max_tokens: int,
    longest_sequence: int,
    compiled_shapes: Sequence[int] | None = None,
    dispatch_us: float = 0.0,
) -> IterationTable:
    """The engine's iteration table for a compiled plan (fusion preset or groups, explicit
    tiles; other tiles autotuned per bucket). max_tokens: largest prefill tokens in one
    iteration (max_num_batched_tokens, or the longest sequence when prompts go whole).
    compiled_shapes: the seq_len buckets the attention kernels were compiled for (None: every
    length); dispatch_us: extra host dispatch per kernel on the generic path (`fallback`).
    The cells of `IterationCosts`, evaluated at once (three vectorized plan evaluations)."""
    costs = IterationCosts(
        block, hardware, fusion, tiles, longest_sequence=longest_sequence,
        compiled_shapes=compiled_shapes, dispatch_us=dispatch_us,
    )  # fmt: skip
    return costs.table(max_num_seqs=max_num_seqs, max_tokens=max_tokens)
