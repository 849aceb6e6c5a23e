"""From a serving packet configuration to the continuous scheduler's inputs, and its run.

A packet whose block phase is `serving` and whose batch policy says `scheduler: continuous`
runs `model.runtime.serving` (model/runtime/README.md "Continuous batching"); the Scenario
(triage/scenario.py) carries both this and the dynamic batcher's RuntimeConfig, so the
per-step views (worksheet, Diagnose) keep working on a decode step of the same block. Sweeps,
the validation matrix and the search run this scheduler through `IterationPlan` (what a work
unit carries to build the table) and `serving_row` (what a run gives back).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import HardwareEnvelope
from model.runtime.inputs import RuntimeConfig
from model.runtime.serving import (
    ContinuousPolicy,
    IterationTable,
    LengthMix,
    ServingConfig,
    ServingResult,
    ServingSLA,
    simulate_serving,
)
from model.runtime.serving_rules import default_kv_cache_tokens
from model.runtime.serving_summary import serving_summary
from model.runtime.serving_table import IterationCosts, build_iteration_table
from packets.model_specs import fusion_spec, tile_spec
from packets.schema import Config, DistributionService, Packet

GENERATION = "inputs.workload.generation"


def is_serving(config: Config) -> bool:
    """True when the configuration runs the continuous (iteration-level) scheduler."""
    return config.batch_policy.scheduler == "continuous"


def serving_config(
    packet: Packet,
    config: Config,
    hardware: HardwareEnvelope,
    block: BlockSpec,
    runtime: RuntimeConfig,
) -> ServingConfig:
    """The continuous scheduler's inputs (seed, request count and arrivals from `runtime`).
    ValueError with one line naming the packet field when the configuration cannot run."""
    generation = packet.inputs.workload.generation
    if generation is None:
        raise ValueError(f"{GENERATION} is required for batch_policy.scheduler continuous")
    policy = config.batch_policy
    kv = policy.kv_cache_tokens
    if kv is None:
        kv = default_kv_cache_tokens(block, hardware.hbm_gib)
    sla = packet.inputs.sla
    return ServingConfig(
        workload=runtime.workload,
        prompt_len=LengthMix(
            f"{GENERATION}.prompt_len",
            tuple(generation.prompt_len.values),
            tuple(generation.prompt_len.weights),
        ),
        output_len=LengthMix(
            f"{GENERATION}.output_len",
            tuple(generation.output_len.values),
            tuple(generation.output_len.weights),
        ),
        policy=ContinuousPolicy(
            max_num_seqs=policy.max_num_seqs or 1,
            max_num_batched_tokens=policy.max_num_batched_tokens or 1,
            chunked_prefill=bool(policy.chunked_prefill),
            kv_cache_tokens=int(kv),
        ),
        hardware=runtime.hardware,
        placement=config.placement,
        service=runtime.service,
        sla=ServingSLA(sla.p95_ms, sla.p99_ms, sla.ttft_p95_ms, sla.tpot_p95_ms),
        seed=runtime.seed,
    )


def _freeze(value: Any) -> Any:
    """Nested lists/dicts as tuples (hashable), mappings in sorted key order."""
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class IterationPlan:
    """The arguments of `build_iteration_table` for one engine (hashable, ~1 KB pickled):
    what a sweep or matrix work unit carries instead of the table's arrays.

    Attributes:
        block, hardware: what runs where.
        fusion: preset name, or op groups as tuples.
        tiles: ((op, ((field, value), ...)), ...) explicit tiles; other ops autotuned.
        max_num_seqs: sequences per iteration (decode-attention rows).
        max_tokens: most prefill tokens per iteration (max_num_batched_tokens).
        longest_sequence: longest prompt + output, tokens.
        compiled: ascending compiled seq_len buckets.
        dispatch_us: the generic path's extra host dispatch per kernel, us.
    """

    block: BlockSpec
    hardware: HardwareEnvelope
    fusion: str | tuple
    tiles: tuple
    max_num_seqs: int
    max_tokens: int
    longest_sequence: int
    compiled: tuple[int, ...]
    dispatch_us: float

    def build(self) -> IterationTable:
        """The iteration table (model.runtime.serving_table.build_iteration_table)."""
        fusion = self.fusion if isinstance(self.fusion, str) else [list(g) for g in self.fusion]
        return build_iteration_table(
            self.block,
            self.hardware,
            fusion,
            {op: dict(fields) for op, fields in self.tiles},
            max_num_seqs=self.max_num_seqs,
            max_tokens=self.max_tokens,
            longest_sequence=self.longest_sequence,
            compiled_shapes=list(self.compiled),
            dispatch_us=self.dispatch_us,
        )


def iteration_plan(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationPlan | None:
    """The plan of a configuration's iteration table (None for a pinned service distribution)."""
    if isinstance(config.service, DistributionService):
        return None
    return IterationPlan(
        block=block,
        hardware=hardware,
        fusion=_freeze(fusion_spec(config)),
        tiles=_freeze(tile_spec(config)),
        max_num_seqs=serving.policy.max_num_seqs,
        max_tokens=serving.policy.max_num_batched_tokens,
        longest_sequence=serving.longest_sequence,
        compiled=tuple(int(s) for s in config.compiled_shapes.seq_len),
        dispatch_us=float(config.fallback.dispatch_overhead_us),
    )


def all_compiled_iteration_table(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationTable | None:
    """The same plan with every prefill chunk on a compiled bucket (the fallback
    counterfactual, model/runtime/serving_attribution.py); None when pinned."""
    from model.runtime.serving_attribution import all_compiled_shapes

    plan = iteration_plan(config, serving, hardware, block)
    if plan is None:
        return None
    biggest = max(plan.max_tokens, plan.longest_sequence)
    compiled = all_compiled_shapes(list(plan.compiled), biggest)
    if compiled is None:  # no buckets: every length is compiled already
        return plan.build()
    return dataclasses.replace(plan, compiled=tuple(compiled)).build()


def iteration_costs(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationCosts | None:
    """The compiled plan's iteration-cost cells (None for a pinned service distribution): what
    the table depends on besides max_num_seqs and max_num_batched_tokens, so one set serves
    every edit of those (the app keeps them by plan)."""
    if isinstance(config.service, DistributionService):
        return None
    return IterationCosts(
        block,
        hardware,
        fusion_spec(config),
        tile_spec(config),
        longest_sequence=serving.longest_sequence,
        compiled_shapes=list(config.compiled_shapes.seq_len),
        dispatch_us=config.fallback.dispatch_overhead_us,
    )


def table_from(costs: IterationCosts | None, serving: ServingConfig) -> IterationTable | None:
    """The iteration table of `serving`'s policy from the plan's cells (None when pinned)."""
    if costs is None:
        return None
    policy = serving.policy
    return costs.table(max_num_seqs=policy.max_num_seqs, max_tokens=policy.max_num_batched_tokens)


def neighbours(serving: ServingConfig, steps: tuple[int, ...]) -> list[tuple[int, int]]:
    """(max_num_seqs, max_num_batched_tokens) of `serving`'s policy moved by each of `steps`,
    either way, one knob at a time (what arrow keys on either field reach next)."""
    seqs, tokens = serving.policy.max_num_seqs, serving.policy.max_num_batched_tokens
    offsets = [d for step in steps for d in (step, -step)]
    return [(seqs + d, tokens) for d in offsets] + [(seqs, tokens + d) for d in offsets]


def iteration_table(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationTable | None:
    """The compiled plan's iteration table (None for a pinned service distribution)."""
    return table_from(iteration_costs(config, serving, hardware, block), serving)


def run_serving(
    serving: ServingConfig,
    table: IterationTable | None,
    command: str,
    *,
    all_compiled: Callable[[], IterationTable | None] | None = None,
) -> tuple[dict, ServingResult]:
    """Simulate and summarize (the summary without `packet` and `candidate`). With
    `all_compiled` (a builder of the all-compiled iteration table, called only when the
    fallback counterfactual needs it) the summary carries the Shapley tail attribution and the
    bottleneck class (model/runtime/serving_attribution.py); without, the composition only."""
    from model.runtime.serving_attribution import active_drivers, with_attribution

    result = simulate_serving(serving, table)
    summary = serving_summary(result, table, command=command)
    if all_compiled is None:
        return summary, result
    needed = "fallback" in active_drivers(result, table)
    return with_attribution(summary, result, table, all_compiled() if needed else None), result


def with_cell(
    serving: ServingConfig,
    *,
    rate_per_s: float,
    prompt_len: LengthMix,
    seed: int,
    requests: int,
) -> ServingConfig:
    """The configuration at another arrival rate (1/s), prompt mix, seed and request count:
    one validation-matrix cell."""
    workload = dataclasses.replace(
        serving.workload,
        arrivals=dataclasses.replace(serving.workload.arrivals, rate_per_s=rate_per_s),
        requests=requests,
    )
    return dataclasses.replace(serving, workload=workload, prompt_len=prompt_len, seed=seed)


def _ratio(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else part / whole


def serving_row(summary: dict) -> dict:
    """One table row from a serving run's summary (`serving_summary`): what sweeps and the
    validation matrix record. Times ms, rates per second, ratios; `preemption_rate` is
    preemptions per measured request, `kv_peak_ratio` the KV-cache peak over one engine's
    capacity. `latency_*` are end to end, as the dynamic batcher's rows; `fallback_rate` is the
    share of prefill iterations on the generic path (0 when none or pinned), and
    `hbm_peak_demand_ratio` is None (no per-iteration HBM demand is modelled)."""
    ttft, tpot, lat = summary["ttft_ms"], summary["tpot_ms"], summary["latency_ms"]
    measured = summary["measured_requests"]
    kv = summary["kv_cache"]
    sla = summary["sla"]
    fallback = summary["prefill_fallback_rate"]
    return {
        "scheduler": "continuous",
        "ttft_p99_ms": ttft["p99"],
        "ttft_p95_ms": ttft["p95"],
        "ttft_p50_ms": ttft["p50"],
        "tpot_p99_ms": tpot["p99"],
        "tpot_p95_ms": tpot["p95"],
        "tpot_p50_ms": tpot["p50"],
        "latency_p99_ms": lat["p99"],
        "latency_p95_ms": lat["p95"],
        "latency_p50_ms": lat["p50"],
        "latency_mean_ms": lat["mean"],
        "latency_max_ms": lat["max"],
        "throughput_per_s": summary["throughput_per_s"],
        "tokens_per_s": summary["tokens_per_s"],
        "measured_requests": measured,
        "iterations": summary["iterations"],
        "preemptions": summary["preemptions"],
        "preemption_rate": summary["preemption_rate"],
        "kv_peak_ratio": _ratio(kv["peak_tokens"], kv["capacity_tokens_per_engine"]),
        "fallback_rate": 0.0 if fallback is None else fallback,
        "hbm_peak_demand_ratio": None,
        "p95_ok": sla["p95_ok"],
        "p99_ok": sla["p99_ok"],
        "ttft_p95_ok": sla["ttft_p95_ok"],
        "tpot_p95_ok": sla["tpot_p95_ok"],
    }
