"""The validation matrix: load levels x shape mixes x seeds, baseline and candidate in each cell.

Defaults (at least 3 x 2 x 3): load factors 0.5, 1.0 and 1.25 of the packet's arrival rate
(light, production, peak), the production shape mix plus a long-tail stress mix (the same
shapes with the weights reversed, so the largest shapes dominate), and the packet's seed and
the next two. Cells run in chunks so a caller can show progress and cancel between chunks.
Also records the memory check: the candidate's worksheet at the production point (SRAM
footprint against capacity, spill per request) and the peak HBM demand it reached.

Each cell is judged on what its load asks (triage/review/cells.py) and records every target it
missed with the metric, its value and the target.

A serving packet's cells run the continuous scheduler (triage/serving_scenario.py): its shape
mixes are the prompt-length mix (`generation.prompt_len`, the output mix unchanged) and its
long-tail reversal, each cell records TTFT and TPOT p95, tokens/s, preemptions per request and
the KV-cache peak besides the latency tails, and is judged on the serving SLA (TTFT p95, TPOT
p95, latency p95/p99, keeping up). The memory check adds the KV-cache peak and preemptions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from model.runtime.inputs import ShapeMix
from model.runtime.serving import LengthMix
from packets.candidates import BASELINE, find_candidate
from packets.fingerprint import inputs_sha256
from packets.schema import MatrixCell, MemoryCheck, NamedShapeMix, Packet, ValidationMatrix
from triage.review.cells import judge_cell, keep_up_tolerance
from triage.review.common import PRODUCTION, is_serving_packet
from triage.scenario import Scenario, build_scenario
from triage.serving_scenario import GENERATION, iteration_plan, with_cell
from triage.workunits import Cancelled as Cancelled  # raised between chunks
from triage.workunits import Point, ServingPoint, plan_of, run_points

if TYPE_CHECKING:
    from packets.load import LoadedPacket

DEFAULT_LOAD_FACTORS = (0.5, 1.0, 1.25)
DEFAULT_SEEDS = 3
QUICK = {"load_factors": (1.0, 1.25), "seeds": 1, "requests": 4000}
STRESS = "long-tail"


@dataclass(frozen=True)
class MatrixSpec:
    """What to run: load factors of the packet's rate, seeds (count), requests per run."""

    load_factors: tuple[float, ...] = DEFAULT_LOAD_FACTORS
    seeds: int = DEFAULT_SEEDS
    requests: int | None = None  # default: the packet's request count

    @classmethod
    def quick(cls) -> MatrixSpec:
        """A small matrix for a first look (2 loads x 2 mixes x 1 seed, 4,000 requests)."""
        return cls(**QUICK)


def shape_mixes(packet: Packet) -> list[NamedShapeMix]:
    """The packet's mix (labelled production or synthetic) and the long-tail stress mix: the
    seq_len mix, or for a serving packet the prompt-length mix."""
    workload = packet.inputs.workload
    serving = is_serving_packet(packet) and workload.generation is not None
    mix = workload.generation.prompt_len if serving else workload.shapes.seq_len
    source = packet.inputs.workload.shape_source
    order = np.argsort(mix.values)
    values = [mix.values[i] for i in order]
    weights = [mix.weights[i] for i in order]
    return [
        NamedShapeMix(name=PRODUCTION if source == "production" else "packet", source=source,
                      values=values, weights=weights),
        NamedShapeMix(name=STRESS, source="synthetic", values=values, weights=weights[::-1]),
    ]  # fmt: skip


def arrival_cv(scenario: Scenario) -> float:
    """Coefficient of variation of the gaps between arrivals (dimensionless): 1 for Poisson,
    the packet's `cv` for gamma, the measured gaps' for a trace (rescaling keeps it)."""
    arrivals = scenario.runtime.workload.arrivals
    if arrivals.process == "gamma":
        return float(arrivals.cv)
    if arrivals.process == "trace":
        gaps = np.diff(np.asarray(arrivals.trace_ms, dtype=np.float64))
        mean = float(gaps.mean()) if len(gaps) else 0.0
        return float(gaps.std()) / mean if mean > 0 else 1.0
    return 1.0


def _base_rate(scenario: Scenario) -> float:
    arrivals = scenario.runtime.workload.arrivals
    if arrivals.rate_per_s is not None:
        return arrivals.rate_per_s
    trace = np.asarray(arrivals.trace_ms)
    return (len(trace) - 1) / (trace[-1] - trace[0]) * 1e3


def _cell_config(scenario: Scenario, factor: float, mix: NamedShapeMix, seed: int, requests: int):
    runtime = scenario.runtime
    workload = dataclasses.replace(
        runtime.workload,
        arrivals=dataclasses.replace(
            runtime.workload.arrivals, rate_per_s=_base_rate(scenario) * factor
        ),
        shapes=ShapeMix(tuple(mix.values), tuple(mix.weights)),
        requests=requests,
    )
    return dataclasses.replace(runtime, workload=workload, seed=seed)


def memory_check(
    baseline: Scenario, candidate: Scenario
) -> tuple[int, int, list[str], float, float]:
    """(batch, seq_len, kernels over SRAM, spill MB/request, baseline spill MB/request) at the
    production point: max batch and the mix's most common seq_len."""
    mix = candidate.packet.inputs.workload.shapes.seq_len
    seq_len = mix.values[int(np.argmax(mix.weights))]
    batch = candidate.config.batch_policy.max_batch
    sheet = candidate.worksheet(baseline, batch, seq_len)
    over = [
        " + ".join(k["ops"]) for k in sheet["kernels"] if k["sram_kib"] > k["sram_capacity_kib"]
    ]
    layers = candidate.block.layers
    spill = sheet["totals"]["spill_bytes"] * layers / batch / 1e6
    base_sheet = baseline.worksheet(None, batch, seq_len)
    base_spill = base_sheet["totals"]["spill_bytes"] * layers / batch / 1e6
    return batch, seq_len, over, spill, base_spill


def run_matrix(
    loaded: LoadedPacket,
    candidate: str,
    spec: MatrixSpec = MatrixSpec(),
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    executor: Executor | None = None,
    parallelism: int | None = None,
) -> ValidationMatrix:
    """Run the matrix for `candidate` (KeyError if unknown; Cancelled if `cancelled()` turns
    true between chunks). `progress(done, total)` is called after each chunk of cells. Cells
    run on `executor` (default: a local thread pool), the same cells on any executor."""
    packet = loaded.packet
    find_candidate(packet, candidate)
    scenarios = {BASELINE: build_scenario(loaded), candidate: build_scenario(loaded, candidate)}
    mixes = shape_mixes(packet)
    seeds = [packet.seed + i for i in range(spec.seeds)]
    requests = spec.requests or packet.inputs.workload.requests
    plan: list[tuple[float, NamedShapeMix, int, str]] = [
        (factor, mix, seed, name)
        for factor in spec.load_factors
        for mix in mixes
        for seed in seeds
        for name in scenarios
    ]
    work = _work(scenarios, plan, requests)
    rows = run_points(
        work, executor, parallelism=parallelism, progress=progress, cancelled=cancelled
    )
    sla = packet.inputs.sla
    cvs = {name: arrival_cv(s) for name, s in scenarios.items()}
    cells = []
    for (factor, mix, seed, name), row in zip(plan, rows, strict=True):
        rate = _base_rate(scenarios[name]) * factor
        tolerance = keep_up_tolerance(row["measured_requests"], cvs[name], rate, sla.p99_ms)
        missed = judge_cell(sla, factor, rate, row, tolerance)
        cells.append(
            MatrixCell(
                load_factor=factor,
                rate_per_s=rate,
                shape_mix=mix.name,
                seed=seed,
                config=name,
                p95_ms=row["latency_p95_ms"],
                p99_ms=row["latency_p99_ms"],
                throughput_per_s=row["throughput_per_s"],
                fallback_rate=row["fallback_rate"],
                hbm_peak_demand_ratio=row["hbm_peak_demand_ratio"],
                **{k: row.get(k) for k in SERVING_CELL},
                sla_ok=not missed,
                missed=missed,
            )
        )
    batch, seq_len, over, spill, base_spill = memory_check(
        scenarios[BASELINE], scenarios[candidate]
    )
    peaks = {
        name: max((c.hbm_peak_demand_ratio or 0.0) for c in cells if c.config == name) or None
        for name in scenarios
    }
    kv = {name: _worst(cells, name, "kv_peak_ratio") for name in scenarios}
    preempt = {name: _worst(cells, name, "preemption_rate") for name in scenarios}
    verdict = _memory_verdict(over, spill, base_spill, peaks[candidate], peaks[BASELINE])
    if kv[candidate] is not None:
        verdict += "; " + _kv_verdict(kv[candidate], kv[BASELINE], preempt[candidate],
                                      preempt[BASELINE])  # fmt: skip
    return ValidationMatrix(
        inputs_sha256=inputs_sha256(packet),
        candidate=candidate,
        requests=requests,
        load_factors=list(spec.load_factors),
        shape_mixes=mixes,
        seeds=seeds,
        cells=cells,
        memory=MemoryCheck(
            batch=batch,
            seq_len=seq_len,
            sram_over_capacity=over,
            spill_mb_per_request=spill,
            baseline_spill_mb_per_request=base_spill,
            hbm_peak_demand_ratio_max=peaks[candidate],
            baseline_hbm_peak_demand_ratio_max=peaks[BASELINE],
            kv_peak_ratio_max=kv[candidate],
            baseline_kv_peak_ratio_max=kv[BASELINE],
            preemption_rate_max=preempt[candidate],
            baseline_preemption_rate_max=preempt[BASELINE],
            verdict=verdict,
        ),
    )


SERVING_CELL = ("ttft_p95_ms", "tpot_p95_ms", "tokens_per_s", "preemption_rate", "kv_peak_ratio")
"""A serving cell's extra figures (its row's columns of the same names)."""


def _work(
    scenarios: dict[str, Scenario],
    plan: Sequence[tuple[float, NamedShapeMix, int, str]],
    requests: int,
) -> list[Point | ServingPoint]:
    """One work unit per cell: the dynamic batcher's, or a serving packet's continuous ones."""
    if not all(s.is_serving for s in scenarios.values()):
        plans = {name: plan_of(s) for name, s in scenarios.items()}
        return [
            Point(_cell_config(scenarios[n], f, m, s, requests), plans[n]) for f, m, s, n in plan
        ]
    plans = {
        name: iteration_plan(s.config, s.serving, s.hardware, s.block)
        for name, s in scenarios.items()
    }
    return [
        ServingPoint(_serving_cell(scenarios[n], f, m, s, requests), plans[n])
        for f, m, s, n in plan
    ]


def _serving_cell(scenario: Scenario, factor: float, mix: NamedShapeMix, seed: int,
                  requests: int):  # fmt: skip
    prompts = LengthMix(f"{GENERATION}.prompt_len", tuple(mix.values), tuple(mix.weights))
    return with_cell(scenario.serving, rate_per_s=_base_rate(scenario) * factor,
                     prompt_len=prompts, seed=seed, requests=requests)  # fmt: skip


def _worst(cells: Sequence[MatrixCell], config: str, field: str) -> float | None:
    values = [getattr(c, field) for c in cells if c.config == config]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _kv_verdict(peak: float, base: float | None, rate: float | None, base_rate: float | None):
    text = f"KV cache peak {peak:.0%} of capacity (baseline {(base or 0.0):.0%})"
    if rate:
        text += f"; {rate:.3f} preemptions per request (baseline {(base_rate or 0.0):.3f})"
    return text


def _memory_verdict(
    over: Sequence[str], spill: float, base_spill: float, peak: float | None, base: float | None
) -> str:
    parts = []
    if over:
        parts.append(f"SRAM footprint over capacity in {', '.join(over)}")
    if spill > base_spill:
        parts.append(f"spills {spill:.2f} MB/request to HBM (baseline {base_spill:.2f})")
    if peak is not None and base is not None and peak > base:
        parts.append(f"peak HBM demand {peak:.2f}x bandwidth (baseline {base:.2f}x)")
    return (
        "; ".join(parts)
        if parts
        else "fits on chip; no new spill; peak HBM demand not above baseline"
    )
