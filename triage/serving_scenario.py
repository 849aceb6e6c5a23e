"""From a serving packet configuration to the continuous scheduler's inputs, and its run.

A packet whose block phase is `serving` and whose batch policy says `scheduler: continuous`
runs `model.runtime.serving` (model/runtime/README.md "Continuous batching"); the Scenario
(triage/scenario.py) carries both this and the dynamic batcher's RuntimeConfig, so the
per-step views (worksheet, sweeps) keep working on a decode step of the same block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

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
from model.runtime.serving_summary import serving_summary
from model.runtime.serving_table import build_iteration_table, default_kv_cache_tokens
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


def iteration_table(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationTable | None:
    """The compiled plan's iteration table (None for a pinned service distribution)."""
    if isinstance(config.service, DistributionService):
        return None
    return build_iteration_table(
        block,
        hardware,
        fusion_spec(config),
        tile_spec(config),
        max_num_seqs=serving.policy.max_num_seqs,
        max_tokens=serving.policy.max_num_batched_tokens,
        longest_sequence=serving.longest_sequence,
        compiled_shapes=list(config.compiled_shapes.seq_len),
        dispatch_us=config.fallback.dispatch_overhead_us,
    )


def all_compiled_iteration_table(
    config: Config, serving: ServingConfig, hardware: HardwareEnvelope, block: BlockSpec
) -> IterationTable | None:
    """The same plan with every prefill chunk on a compiled bucket (the fallback
    counterfactual, model/runtime/serving_attribution.py); None when pinned."""
    from model.runtime.serving_attribution import all_compiled_shapes

    if isinstance(config.service, DistributionService):
        return None
    policy = serving.policy
    biggest = max(policy.max_num_batched_tokens, serving.longest_sequence)
    return build_iteration_table(
        block,
        hardware,
        fusion_spec(config),
        tile_spec(config),
        max_num_seqs=policy.max_num_seqs,
        max_tokens=policy.max_num_batched_tokens,
        longest_sequence=serving.longest_sequence,
        compiled_shapes=all_compiled_shapes(list(config.compiled_shapes.seq_len), biggest),
        dispatch_us=config.fallback.dispatch_overhead_us,
    )


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


def with_requests(serving: ServingConfig, requests: int) -> ServingConfig:
    """The same configuration at another request count."""
    return dataclasses.replace(
        serving, workload=dataclasses.replace(serving.workload, requests=requests)
    )
