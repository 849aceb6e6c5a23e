"""From a serving packet configuration to the continuous scheduler's inputs, and its run.

A packet whose block phase is `serving` and whose batch policy says `scheduler: continuous`
runs `model.runtime.serving` (model/runtime/README.md "Continuous batching"); the Scenario
(triage/scenario.py) carries both this and the dynamic batcher's RuntimeConfig, so the
per-step views (worksheet, sweeps) keep working on a decode step of the same block.
"""

from __future__ import annotations

import dataclasses

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
from model.runtime.serving_table import IterationCosts, default_kv_cache_tokens
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
    serving: ServingConfig, table: IterationTable | None, command: str
) -> tuple[dict, ServingResult]:
    """Simulate and summarize (the summary without `packet` and `candidate`)."""
    result = simulate_serving(serving, table)
    return serving_summary(result, table, command=command), result


def with_requests(serving: ServingConfig, requests: int) -> ServingConfig:
    """The same configuration at another request count."""
    return dataclasses.replace(
        serving, workload=dataclasses.replace(serving.workload, requests=requests)
    )
