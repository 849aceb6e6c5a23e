"""The fusion & tile-plan worksheet of a serving packet: per phase, at the serving run's point.

A continuous-batching engine runs two phases of the same decoder (model/runtime/serving_table.py):
prefill chunks (GEMMs over the chunk's tokens, causal attention within it) and decode steps
(GEMMs over one token per running sequence, attention over each sequence's KV cache). So the
worksheet is read twice, with the compile-plan model the serving run's iteration table is built
from (`model.compiler.worksheet.worksheet`, no new cost terms):

- prefill at batch 1 over a representative chunk (`SheetPoint.chunk`),
- decode at the running batch over the mean KV length (`SheetPoint.decode_batch`, `kv_len`),

and one representative mixed iteration (those decodes plus that chunk) is priced from the run's
own iteration table the way the scheduler prices it (`iteration_split`), split into the decode
step alone and what the chunk adds to it (the prefill interference a decode step sees), with
the buckets the run pads it to (token count, chunk, the compiled attention bucket): the
per-kernel rows are the plan at the point itself, the split what the run charges for it.

The point comes from the serving run's summary and the packet's length mixes:

- decode_batch: the time-averaged number of sequences past their first token on one engine, by
  Little's law (L = lambda W): completions per second per engine x mean(latency - TTFT), s;
- kv_len: the mean KV length over every decode step of the mix, E[P] + E[O(O-1)] / (2 E[O-1])
  for prompt length P and output length O drawn independently (a sequence's O - 1 decode steps
  read P + 1 ... P + O - 1 cached tokens);
- chunk: the mix's most common prompt (as `workbench worksheet` takes the most common seq_len),
  cut to max_num_batched_tokens less the decode batch when prefill is chunked (the iteration's
  budget holds the decode steps first).

Times ms (the split) or us (per-kernel rows, one pass of the block), lengths tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from model.runtime.serving import IterationTable
from packets.model_specs import fusion_spec, tile_spec
from packets.schema import Config, Packet
from triage.scenario import Scenario

SCHEMA = "handoff-serving-worksheet/1"


@dataclass(frozen=True)
class SheetPoint:
    """Where a serving worksheet is read (see the module docstring for each derivation).

    Attributes:
        decode_batch: running decode sequences per engine, >= 1.
        kv_len: mean KV length a decode step reads, tokens, >= 1.
        prompt_len: the mix's most common prompt, tokens.
        chunk: prefill tokens of the representative chunk, >= 1.
        chunked: whether prefill is chunked (else the prompt goes whole).
    """

    decode_batch: int
    kv_len: int
    prompt_len: int
    chunk: int
    chunked: bool


def _most_common(values, weights) -> int:  # type: ignore[no-untyped-def]
    return int(values[max(range(len(values)), key=lambda i: weights[i])])


def mean_decode_kv(packet: Packet) -> float:
    """Mean KV length over every decode step of the packet's length mixes, tokens:
    E[P] + E[O(O-1)] / (2 E[O-1]) (prompt P and output O independent; O counts the prefill's
    token, so a request makes O - 1 decode steps). The prompt's mean when no output decodes."""
    generation = packet.inputs.workload.generation
    if generation is None:
        raise ValueError("inputs.workload.generation is required for a serving worksheet")
    p = np.asarray(generation.prompt_len.values, np.float64)
    pw = np.asarray(generation.prompt_len.weights, np.float64)
    o = np.asarray(generation.output_len.values, np.float64)
    ow = np.asarray(generation.output_len.weights, np.float64)
    mean_prompt = float(np.dot(p, pw) / pw.sum())
    steps = float(np.dot(o - 1.0, ow) / ow.sum())
    if steps <= 0:
        return mean_prompt
    return mean_prompt + float(np.dot(o * (o - 1.0), ow) / ow.sum()) / (2.0 * steps)


def running_decode_batch(summary: dict, engines: int) -> float:
    """Sequences decoding at once on one engine, time-averaged (Little's law): measured
    completions per second per engine x mean(latency - TTFT) in s; 0 without completions."""
    rate = summary["throughput_per_s"]
    latency, ttft = summary["latency_ms"]["mean"], summary["ttft_ms"]["mean"]
    if rate is None or latency is None or ttft is None:
        return 0.0
    return rate / max(1, engines) * max(0.0, latency - ttft) / 1e3


def sheet_point(summary: dict, packet: Packet, config: Config, engines: int) -> SheetPoint:
    """The worksheet's point for a configuration from its serving run's summary."""
    policy = config.batch_policy
    seqs = max(1, int(policy.max_num_seqs or 1))
    decode = min(seqs, max(1, round(running_decode_batch(summary, engines))))
    generation = packet.inputs.workload.generation
    if generation is None:
        raise ValueError("inputs.workload.generation is required for a serving worksheet")
    prompt = _most_common(generation.prompt_len.values, generation.prompt_len.weights)
    chunked = bool(policy.chunked_prefill)
    budget = int(policy.max_num_batched_tokens or prompt)
    chunk = max(1, min(prompt, budget - decode)) if chunked else prompt
    return SheetPoint(decode, max(1, round(mean_decode_kv(packet))), prompt, chunk, chunked)


@dataclass(frozen=True)
class IterationSplit:
    """One mixed iteration priced from an iteration table as the scheduler prices it
    (model/runtime/serving_kernel.py): lin[m bucket of decodes + chunk] + decode attention[
    decodes, KV bucket] + prefill attention[chunk bucket]; each bucket pads up. ms.

    Attributes:
        token_parallel_ms: GEMMs, norms, RoPE, residuals over all the iteration's tokens.
        decode_attention_ms: attention of the decode sequences over their KV cache.
        prefill_attention_ms: attention over the chunk.
        decode_alone_ms: the same decode steps without the chunk.
        prefill_fallback: the chunk is above every compiled bucket (generic path).
        tokens_bucket: the token-count bucket the iteration's tokens are padded to.
        chunk_bucket: the prefill-token bucket the chunk is padded to.
        attention_shape: the seq_len the chunk's attention runs at: the smallest compiled
            bucket >= chunk_bucket (chunk_bucket itself on the generic path or when every
            length is compiled), as `IterationCosts` costs it.
    """

    token_parallel_ms: float
    decode_attention_ms: float
    prefill_attention_ms: float
    decode_alone_ms: float
    prefill_fallback: bool
    tokens_bucket: int
    chunk_bucket: int
    attention_shape: int

    @property
    def iteration_ms(self) -> float:
        """The mixed iteration's time, ms."""
        return self.token_parallel_ms + self.decode_attention_ms + self.prefill_attention_ms

    @property
    def chunk_ms(self) -> float:
        """What the chunk adds to the decode step (its prefill interference), ms."""
        return self.iteration_ms - self.decode_alone_ms


def iteration_split(
    table: IterationTable, point: SheetPoint, compiled: Sequence[int] = ()
) -> IterationSplit:
    """`point`'s mixed iteration from `table` (ValueError when the table does not reach it);
    `compiled`: the plan's compiled seq_len buckets (for `attention_shape`)."""
    d, kv, p = point.decode_batch, point.kv_len, point.chunk
    if (
        table.dec_attn_ms.shape[0] < d
        or table.kv_edges[-1] < kv
        or table.p_edges[-1] < p
        or table.m_edges[-1] < d + p
    ):
        raise ValueError("the iteration table does not reach the worksheet's point")

    def at(edges: np.ndarray, x: int) -> int:
        return int(np.searchsorted(edges, x))

    lin = float(table.lin_ms[at(table.m_edges, d + p)])
    dec = float(table.dec_attn_ms[d - 1, at(table.kv_edges, kv)])
    pre = float(table.pre_attn_ms[at(table.p_edges, p)])
    fallback = table.pre_fallback is not None and bool(table.pre_fallback[at(table.p_edges, p)])
    alone = float(table.lin_ms[at(table.m_edges, d)]) + dec
    chunk = int(table.p_edges[at(table.p_edges, p)])
    above = sorted(int(c) for c in compiled if int(c) >= chunk)
    shape = above[0] if above and not fallback else chunk
    return IterationSplit(
        lin, dec, pre, alone, fallback, int(table.m_edges[at(table.m_edges, d + p)]), chunk, shape
    )


def phase_worksheets(scenario: Scenario, baseline: Scenario, point: SheetPoint) -> dict:
    """The worksheet (handoff-worksheet/1) of `scenario`'s plan against `baseline`'s in each
    phase: {'prefill': at batch 1 over the chunk, 'decode': at the decode batch over kv_len}."""
    from model.compiler.worksheet import worksheet

    def sheet(phase: str, batch: int, seq_len: int) -> dict:
        return worksheet(
            dataclasses.replace(scenario.block, phase=phase),
            scenario.hardware,
            fusion_spec(scenario.config),
            tile_spec(scenario.config),
            batch,
            seq_len,
            baseline_fusion=fusion_spec(baseline.config),
            baseline_tiles=tile_spec(baseline.config),
        )

    return {
        "prefill": sheet("prefill", 1, point.chunk),
        "decode": sheet("decode", point.decode_batch, point.kv_len),
    }


def same_plan(a: Config, b: Config) -> bool:
    """True when two configurations compile the same plan (fusion, tiles, compiled shapes,
    fallback): their iteration tables differ only in extent."""
    return (
        fusion_spec(a) == fusion_spec(b)
        and tile_spec(a) == tile_spec(b)
        and a.compiled_shapes == b.compiled_shapes
        and a.fallback == b.fallback
    )


def with_plan_of(config: Config, plan: Config) -> Config:
    """`config`'s batch policy and placement with `plan`'s fusion, tiles, compiled shapes and
    fallback: the baseline's plan at the working configuration's point."""
    return config.model_copy(
        update={
            "fusion": plan.fusion,
            "tiles": plan.tiles,
            "compiled_shapes": plan.compiled_shapes,
            "fallback": plan.fallback,
        }
    )


def baseline_plan_table(
    scenario: Scenario, baseline: Scenario, scenario_of: Callable[[Config], Scenario]
) -> IterationTable | None:
    """The baseline plan's iteration table at `scenario`'s policy (what `serving_worksheet`
    prices the baseline's iteration with): `scenario`'s own table when both compile the same
    plan, else the table of `with_plan_of` built by `scenario_of` (a cached subject in the
    app, `build_scenario` on the command line). None when pinned (no table)."""
    table = scenario.iteration_table
    if table is None or same_plan(scenario.config, baseline.config):
        return table
    return scenario_of(with_plan_of(scenario.config, baseline.config)).iteration_table


def serving_worksheet(
    summary: dict,
    scenario: Scenario,
    baseline: Scenario,
    table: IterationTable | None,
    baseline_table: IterationTable | None,
) -> dict:
    """The serving worksheet of `scenario` against `baseline` (see the module docstring):
    {schema, point, prefill, decode, iteration: {working, baseline}} with the point from
    `summary` (the working configuration's serving run); `baseline_table` is the baseline
    plan's iteration table at the working configuration's policy (`with_plan_of`). With a
    pinned service distribution (no table) `iteration` is None: the run prices no kernels."""
    point = sheet_point(summary, scenario.packet, scenario.config, int(scenario.hardware.cores))
    return {
        "schema": SCHEMA,
        "point": dataclasses.asdict(point),
        **phase_worksheets(scenario, baseline, point),
        "iteration": None
        if table is None or baseline_table is None
        else {
            "working": iteration_split(table, point, scenario.config.compiled_shapes.seq_len),
            "baseline": iteration_split(
                baseline_table, point, baseline.config.compiled_shapes.seq_len
            ),
        },
    }


def serving_worksheet_json(sheet: dict) -> dict:
    """`sheet` (`serving_worksheet`) as plain JSON values: each iteration split as its fields
    plus `iteration_ms` and `chunk_ms` (what `workbench worksheet --json` prints)."""

    def split(s: IterationSplit) -> dict:
        return {**dataclasses.asdict(s), "iteration_ms": s.iteration_ms, "chunk_ms": s.chunk_ms}

    iteration = sheet["iteration"]
    return {
        **sheet,
        "iteration": None if iteration is None else {k: split(v) for k, v in iteration.items()},
    }


def serving_worksheet_markdown(sheet: dict) -> str:
    """`sheet` (`serving_worksheet`) as markdown: the mixed iteration's split (working plan,
    baseline plan), then each phase's worksheet (`worksheet_markdown`) under its point."""
    from model.compiler.worksheet import worksheet_markdown

    point, iteration = sheet["point"], sheet["iteration"]
    chunk = f"chunk {point['chunk']:,}" if point["chunked"] else f"prompt {point['prompt_len']:,}"
    lines = [
        f"Serving worksheet: {point['decode_batch']} running decodes per engine (Little's law "
        f"on the serving run), KV {point['kv_len']:,} tokens (the mix's mean over decode "
        f"steps), {chunk} tokens (the most common prompt"
        + (", cut to the token budget)" if point["chunked"] else ", whole)"),
        "",
    ]
    if iteration is None:
        lines.append(
            "Iteration: service times are pinned (a distribution): the run prices no kernels."
        )
    else:
        for name, s in (
            ("working plan", iteration["working"]),
            ("baseline plan", iteration["baseline"]),
        ):
            attention = (
                "the generic path" if s.prefill_fallback else f"seq_len {s.attention_shape:,}"
            )
            lines.append(
                f"- Iteration, {name}: {s.iteration_ms:,.2f} ms = decode step "
                f"{s.decode_alone_ms:,.2f} ms + the chunk {s.chunk_ms:,.2f} ms (token-parallel "
                f"{s.token_parallel_ms:,.2f}, decode attention {s.decode_attention_ms:,.2f}, "
                f"prefill attention {s.prefill_attention_ms:,.2f}); padded to "
                f"{s.tokens_bucket:,} tokens, the chunk to {s.chunk_bucket:,}, its attention "
                f"at {attention}"
            )
    for phase in ("prefill", "decode"):
        lines += ["", f"## {phase.capitalize()}", "", worksheet_markdown(sheet[phase])]
    return "\n".join(lines)
