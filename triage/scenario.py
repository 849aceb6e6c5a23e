"""From a packet to the model's inputs: envelope, block, compiled plan and runtime configuration.

A `Scenario` is one configuration of a packet (the baseline or a candidate) at one seed and
request count, ready to simulate. Everything the model needs is derived here, once, so the
command line and the app run exactly the same thing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import HardwareEnvelope
from model.compiler.library import library_for_metadata
from model.compiler.service_table import FallbackPolicy, build_service_table
from model.runtime.inputs import (
    SLA,
    Arrivals,
    BatchPolicy,
    Fallback,
    RuntimeConfig,
    RuntimeHardware,
    ServiceSpec,
    ShapeMix,
    Workload,
)
from model.service import ServiceTable
from packets.candidates import BASELINE, resolve_config, resolve_dtype
from packets.checks import resolve_relative
from packets.hardware_file import resolve_hardware
from packets.model_specs import block_spec, fusion_spec, tile_spec
from packets.schema import Config, DistributionService, Packet
from packets.trace import read_trace

if TYPE_CHECKING:
    from model.compiler.plan import KernelMemo
    from packets.load import LoadedPacket


@dataclass(frozen=True)
class Scenario:
    """One runnable configuration of a packet.

    Attributes:
        packet: the packet.
        candidate: candidate name, or 'baseline'.
        config: the packet's configuration after the candidate's overrides.
        hardware: the resolved hardware envelope.
        block: the model block (in the configuration's precision).
        runtime: the runtime simulator's configuration (seed and request count applied).
    """

    packet: Packet
    candidate: str
    config: Config
    hardware: HardwareEnvelope
    block: BlockSpec
    runtime: RuntimeConfig

    @property
    def uses_model(self) -> bool:
        """True when service times come from the compile-plan model (not a pinned distribution)."""
        return not isinstance(self.config.service, DistributionService)

    @property
    def fallback_policy(self) -> FallbackPolicy:
        return FallbackPolicy(
            self.config.fallback.compile_stall_ms, self.config.fallback.dispatch_overhead_us
        )

    def _table(self, compiled: list[int], memo: KernelMemo | None = None) -> ServiceTable:
        """The plan's service table with `compiled` shapes; `memo`: kernels kept from earlier
        tables (`model.compiler.plan.KernelMemo`, the app's Tune step passes one)."""
        sizes = range(1, self.config.batch_policy.max_batch + 1)
        return build_service_table(
            self.block,
            self.hardware,
            fusion_spec(self.config),
            tile_spec(self.config),
            compiled,
            self.fallback_policy,
            list(sizes),
            sorted(self.runtime.workload.shapes.values),
            memo=memo,
        )

    @property
    def compiled_shapes(self) -> list[int]:
        """The seq_len buckets the plan compiled (ascending): `service_table`'s."""
        return list(self.config.compiled_shapes.seq_len)

    @property
    def all_compiled_shapes(self) -> list[int]:
        """Those and every shape the workload draws (ascending): `all_compiled_table`'s."""
        return sorted(set(self.compiled_shapes) | set(self.runtime.workload.shapes.values))

    @cached_property
    def service_table(self) -> ServiceTable | None:
        """Batch x shape service times of the compiled plan (None for pinned distributions)."""
        return self._table(self.compiled_shapes) if self.uses_model else None

    def worksheet(self, baseline: Scenario | None, batch: int, seq_len: int) -> dict:
        """The fusion & tile-plan worksheet at (batch, seq_len), shifts against `baseline`
        (None: against itself); schema handoff-worksheet/1."""
        from model.compiler.worksheet import worksheet

        base = baseline or self
        return worksheet(
            self.block,
            self.hardware,
            fusion_spec(self.config),
            tile_spec(self.config),
            batch,
            seq_len,
            baseline_fusion=fusion_spec(base.config),
            baseline_tiles=tile_spec(base.config),
        )

    @property
    def is_serving(self) -> bool:
        """True when this configuration runs the continuous scheduler (LLM serving). The same
        test as `triage.serving_scenario.is_serving`, without importing that module (and the
        serving model and its numba kernels) into every dynamic-batcher run."""
        return self.config.batch_policy.scheduler == "continuous"

    @cached_property
    def serving(self):
        """The continuous scheduler's inputs (triage/serving_scenario.py); None otherwise."""
        from triage.serving_scenario import serving_config

        if not self.is_serving:
            return None
        return serving_config(self.packet, self.config, self.hardware, self.block, self.runtime)

    @cached_property
    def iteration_table(self):
        """The serving engine's iteration-time table (None: pinned, or not serving)."""
        from triage.serving_scenario import iteration_table

        if self.serving is None:
            return None
        return iteration_table(self.config, self.serving, self.hardware, self.block)

    @cached_property
    def all_compiled_table(self) -> ServiceTable | None:
        """The same plan with every drawn shape compiled: the no-fallback counterfactual."""
        return self._table(self.all_compiled_shapes) if self.uses_model else None


def runtime_config(
    packet: Packet,
    config: Config,
    hardware: HardwareEnvelope,
    trace_ms=None,
) -> RuntimeConfig:
    """The runtime simulator's inputs for a packet configuration."""
    workload = packet.inputs.workload
    arrivals = workload.arrivals
    service = config.service
    return RuntimeConfig(
        workload=Workload(
            arrivals=Arrivals(
                process=arrivals.process,
                rate_per_s=arrivals.rate_per_s,
                cv=arrivals.cv if arrivals.cv is not None else 1.0,
                trace_ms=trace_ms,
            ),
            shapes=ShapeMix(
                tuple(workload.shapes.seq_len.values), tuple(workload.shapes.seq_len.weights)
            ),
            requests=workload.requests,
            warmup_fraction=workload.warmup_fraction,
        ),
        # The bandwidth streams achieve (memory_efficiency of the spec), as the compile model uses.
        hardware=RuntimeHardware(
            cores=hardware.cores, hbm_gbs=hardware.hbm_gbs * hardware.memory_efficiency
        ),
        batch_policy=BatchPolicy(
            config.batch_policy.max_batch,
            config.batch_policy.max_queue_delay_ms,
            config.batch_policy.bucketing,
        ),
        placement=config.placement,
        service=(
            ServiceSpec("distribution", service.dist, service.mean_ms, service.cv)
            if isinstance(service, DistributionService)
            else ServiceSpec("model")
        ),
        compiled_shapes=tuple(config.compiled_shapes.seq_len),
        fallback=Fallback(config.fallback.compile_stall_ms, config.fallback.dispatch_overhead_us),
        sla=SLA(
            packet.inputs.sla.p95_ms,
            packet.inputs.sla.p99_ms,
            packet.inputs.sla.min_throughput_per_s,
        ),
        seed=packet.seed,
    )


def build_scenario(
    loaded: LoadedPacket,
    candidate: str | None = None,
    *,
    seed: int | None = None,
    requests: int | None = None,
    config: Config | None = None,
    hardware: HardwareEnvelope | None = None,
) -> Scenario:
    """The scenario for `candidate` (default: the baseline), optionally at another seed or
    request count, or for an edited `config` (the app's lab), on `hardware` when the caller
    resolved the packet's already (`resolve_hardware`'s result). KeyError for an unknown
    candidate.
    """
    packet = loaded.packet
    name = candidate or BASELINE
    config = config if config is not None else resolve_config(packet, candidate)
    dtype = resolve_dtype(packet, candidate)
    if hardware is None:
        hardware = resolve_hardware(
            packet.inputs.hardware, loaded.base_dir, loaded.name, loaded.yaml
        )
    metadata = packet.inputs.metadata
    library = library_for_metadata(hardware, metadata.compiler, metadata.runtime)
    if library and not hardware.gemm_library:  # the software named runs its GEMMs its way
        hardware = hardware.with_overrides(gemm_library=library)
    trace = None
    if packet.inputs.workload.arrivals.process == "trace":
        path = resolve_relative(packet.inputs.workload.arrivals.trace, loaded.base_dir)
        trace = read_trace(Path(path))
    runtime = runtime_config(packet, config, hardware, trace)
    changes = {}
    if seed is not None:
        changes["seed"] = seed
    if requests is not None:
        changes["workload"] = dataclasses.replace(runtime.workload, requests=requests)
    if changes:
        runtime = dataclasses.replace(runtime, **changes)
    return Scenario(
        packet, name, config, hardware, block_spec(packet.inputs.workload.block, dtype), runtime
    )
