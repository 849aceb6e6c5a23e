"""The lab: runs of the working packet's configurations through the model, cached by inputs.

Textual-free. The Baseline, Diagnose and Tune steps ask one `Lab` (owned by the app) for runs,
load curves (p99 vs load), worksheets and, for a serving packet, serving runs (the continuous
scheduler, as `workbench run`); each answer is cached under a key made of everything
it depends on (the packet's inputs and seed, the configuration, its precision, its label), so
switching steps never recomputes and an edit that returns to an earlier value costs nothing.
Methods are thread-safe: the app calls them from worker threads. The model, numpy, numba and
polars are imported on first use, inside the functions that run it, so the app's first frame never
waits for them.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from packets.candidates import BASELINE, resolve_config, resolve_dtype
from packets.load import LoadedPacket
from workbench.core.session import WorkingPacket

if TYPE_CHECKING:
    import numpy as np

    from model.compiler.hardware import HardwareEnvelope
    from model.runtime.serving_profiles import ServingProfiles
    from model.runtime.simulate import RuntimeResult
    from model.runtime.stats import RuntimeProfiles
    from model.runtime.summary import RunSummary
    from packets.schema import Config
    from triage.scenario import Scenario

WORKING = "working"
"""Label of a configuration edited in the lab and not saved as a candidate."""
LOAD_FACTORS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3)
"""Multiples of the packet's arrival rate the p99-vs-load curve runs at."""
LATENCY_PERCENTILES = (*(float(p) for p in range(50, 100)), 99.5, 99.9)
"""Percentiles the latency curve is read at (the upper half, where tails and SLAs live)."""
CACHE_ENTRIES = 64  # per kind of result; a run keeps ~10 KB of series, never per-request arrays
PREVIEW_ENTRIES = 4  # previews hold a simulation's per-request arrays (~2 MB at 20,000)


@dataclass(frozen=True)
class Subject:
    """One configuration of the working packet, ready to run.

    Attributes:
        loaded: the packet as the scenario builder takes it.
        name: 'baseline', a candidate's name, or 'working' (edited in the lab, not saved).
        config: the configuration to run.
        dtype_from: the candidate whose precision it runs in (None: the packet's precision).
        key: everything a run depends on, as canonical JSON (the cache key).
    """

    loaded: LoadedPacket
    name: str
    config: Config
    dtype_from: str | None
    key: str

    @property
    def dtype(self) -> str:
        """The precision the configuration runs in."""
        return resolve_dtype(self.loaded.packet, self.dtype_from)

    @property
    def hardware(self) -> HardwareEnvelope:
        """The packet's hardware, resolved once per working packet (a hardware file read once,
        not for the edit's check and again for its run). PacketError when it cannot be."""
        return hardware_of(self.loaded)

    @cached_property
    def scenario(self) -> Scenario:
        """The subject's model scenario, built once (its hardware resolved once: a hardware
        file is read from disk once per subject), its service tables from `TABLES`."""
        return scenario_for(self)


_HARDWARE_KEPT = 4  # packets whose hardware is kept (the working one and a few before it)
_hardware: OrderedDict[int, tuple[Any, HardwareEnvelope]] = OrderedDict()


def hardware_of(loaded: LoadedPacket) -> HardwareEnvelope:
    """`resolve_hardware` of a packet, memoized by the packet object (an edit makes a new
    packet, so a changed hardware section, or a file re-read on opening, is resolved anew)."""
    from packets.hardware_file import resolve_hardware

    packet = loaded.packet
    with _subjects_lock:
        found = _hardware.get(id(packet))
        if found is not None and found[0] is packet:
            return found[1]
    hardware = resolve_hardware(packet.inputs.hardware, loaded.base_dir, loaded.name)
    with _subjects_lock:
        _hardware[id(packet)] = (packet, hardware)  # holding the packet keeps its id unique
        while len(_hardware) > _HARDWARE_KEPT:
            _hardware.popitem(last=False)
    return hardware


def loaded_packet(working: WorkingPacket) -> LoadedPacket:
    """The working packet as `triage.scenario.build_scenario` takes it (no source lines)."""
    return LoadedPacket(working.packet, working.name, b"", working.base_dir, working.warnings)


_SUBJECTS_KEPT = 16  # recent subjects (each edit makes one; Tune asks for it several times)
_subjects: OrderedDict[tuple, tuple[WorkingPacket, Any, Subject]] = OrderedDict()
_subjects_lock = threading.Lock()


def subject(
    working: WorkingPacket,
    config: Config | None = None,
    *,
    name: str = BASELINE,
    dtype_from: str | None = None,
) -> Subject:
    """The subject for `config` (default: the configuration called `name`, baseline or a
    candidate), run in the precision of candidate `dtype_from` (default: `name`'s).

    The same working packet and config objects give the same Subject object: its cache key is
    built once and its scenario (hardware, service tables) derived once per edit."""
    memo = (id(working), id(working.packet), id(config), name, dtype_from)
    with _subjects_lock:
        found = _subjects.get(memo)
        if found is not None and found[0] is working and found[1] is config:
            _subjects.move_to_end(memo)
            return found[2]
    made = _make_subject(working, config, name, dtype_from)
    with _subjects_lock:
        _subjects[memo] = (working, config, made)  # holding them keeps their ids unique
        while len(_subjects) > _SUBJECTS_KEPT:
            _subjects.popitem(last=False)
    return made


def _make_subject(
    working: WorkingPacket, config: Config | None, name: str, dtype_from: str | None
) -> Subject:
    packet = working.packet
    if config is None:
        config = resolve_config(packet, name)
        dtype_from = name if dtype_from is None and name != BASELINE else dtype_from
    dtype = resolve_dtype(packet, dtype_from)
    key = json.dumps(
        [
            packet.inputs.model_dump(mode="json"),
            packet.seed,
            config.model_dump(mode="json"),
            dtype,
            str(working.base_dir),
            name,
        ],
        sort_keys=True,
    )
    return Subject(loaded_packet(working), name, config, dtype_from, key)


@dataclass(frozen=True)
class ShapeBuckets:
    """Where each runtime shape runs, read from the model's `ServiceTable` (bucket, fallback).

    Attributes:
        shapes: (S,) runtime seq_len values, ascending.
        weights: (S,) traffic share of each shape.
        compiled_shape: (S,) bucket a shape is padded to (the shape itself on fallback).
        fallback: (S,) True where no compiled bucket holds the shape (generic path).
    """

    shapes: np.ndarray
    weights: np.ndarray
    compiled_shape: np.ndarray
    fallback: np.ndarray

    @property
    def fallback_share(self) -> float:
        """Share of traffic (by the mix's weights) that takes the fallback path, 0..1."""
        return float(self.weights[self.fallback].sum())


@dataclass(frozen=True)
class LabRun:
    """One configuration run through the model.

    Attributes:
        name: the subject's label.
        summary: the `workbench run --json` contract (ms, /s, ratios).
        run: the same summary typed (model.runtime.summary.RunSummary): read fields from it.
        profiles: compact series for charts (queue wait, batches, cores, HBM demand).
        latency_ms: (P,) end-to-end latency of measured requests at LATENCY_PERCENTILES, ms
            (linear interpolation, as the summary's percentiles).
        buckets: shape -> compiled bucket mapping (None for a pinned service distribution).
        kernels_per_layer: kernels the fusion plan launches per pass of the block.
        layers: passes of the block per request.
    """

    name: str
    summary: dict
    run: RunSummary
    profiles: RuntimeProfiles
    latency_ms: np.ndarray
    buckets: ShapeBuckets | None
    kernels_per_layer: int
    layers: int


@dataclass(frozen=True)
class ServingRun:
    """One configuration of a serving packet run through the continuous scheduler: the same
    run as `workbench run` (triage.runs.run_serving_scenario).

    Attributes:
        name: the subject's label.
        summary: the serving `workbench run --json` contract (model/runtime/serving_summary.py:
            ttft_ms/tpot_ms/latency_ms with mean/p50/p95/p99/max in ms, tokens_per_s,
            preemptions, sla, kv_cache).
        kv_time_s: (T,) times of the KV-cache timeline, s from the run's first iteration end.
        kv_occupancy: (T,) KV-cache tokens held over all engines' capacity at those times, 0..1.
        kv_capacity_tokens: KV-cache capacity per engine, tokens.
        profiles: the run's chart series (model/runtime/serving_profiles.py): TTFT, TPOT and
            latency at LATENCY_PERCENTILES, queue and per-engine KV peaks over time, per-engine
            busy share and tokens/s.
        kv_bytes_per_token: KV-cache bytes one token holds over all layers.
        weight_bytes: the block's parameter bytes on each engine.
        hbm_gib: HBM per engine (0: the hardware does not say), GiB.
    """

    name: str
    summary: dict
    kv_time_s: np.ndarray
    kv_occupancy: np.ndarray
    kv_capacity_tokens: int | None
    profiles: ServingProfiles
    kv_bytes_per_token: int
    weight_bytes: float
    hbm_gib: float


@dataclass(frozen=True)
class LabPreview:
    """A run's simulation before its summary: the latency curve and chart profiles, for
    showing an edit's effect while the tail attribution (counterfactual re-runs) and the
    classification are still being computed. `Lab.run` completes it into a LabRun.

    Attributes:
        name, profiles, latency_ms: as in LabRun.
        scenario: the scenario that was simulated (its service tables built).
        result: the simulation (per-request arrays; kept only in a small cache).
    """

    name: str
    profiles: RuntimeProfiles
    latency_ms: np.ndarray
    scenario: Scenario
    result: RuntimeResult


@dataclass(frozen=True)
class LoadCurve:
    """Tail latency against offered load, every point with the run's seed and request count.

    Attributes:
        factors: (L,) multiples of the packet's arrival rate.
        rate_per_s: (L,) arrival rate of each point, 1/s.
        p99_ms, p95_ms: (L,) latency percentiles, ms.
        throughput_per_s: (L,) measured completions per second.
    """

    factors: np.ndarray
    rate_per_s: np.ndarray
    p99_ms: np.ndarray
    p95_ms: np.ndarray
    throughput_per_s: np.ndarray


class Cancelled(Exception):
    """A lab computation was abandoned between chunks (a newer request replaced it)."""


class _Cache:
    """A small thread-safe LRU map (values are computed outside the lock)."""

    def __init__(self, entries: int) -> None:
        self._entries = entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._entries:
                self._items.popitem(last=False)


ARROW_STEPS = (1, 2, 3, 4, 5, 6, 7, 8, 10, 20)
"""Offsets of a serving policy's max_num_seqs and max_num_batched_tokens, either way, whose
iteration-cost cells `TableMemo.prefetch` evaluates while the app is idle: the next eight
arrow steps (up/down) and two shift-steps (ten) then gather their tables from kept cells."""


class TableMemo:
    """Service tables by what they depend on (block, hardware, fusion, tiles, compiled shapes,
    fallback, batch sizes and shape values), so an edit that cannot change them (max queue
    delay, placement, load) reuses the tables of the plan it runs. Thread-safe.

    A table asked for while another thread builds it waits for that build (Tune's tables
    built ahead and the edit that needs them). A table that is built takes the kernels it
    shares with tables built before it from
    `kernels` (`model.compiler.plan.KernelMemo`): a tile edit costs only the edited op's
    kernel again, on the compiled path and at each busy-core level.

    Attributes:
        builds: how many tables were built (not reused), for tests and benchmarks.
        kernels: the kernel costs kept between builds.
    """

    def __init__(self, entries: int = 16) -> None:
        self._cache = _Cache(entries)  # a table is ~100 KB at 32 batch sizes x 8 shapes
        self._lock = threading.Lock()
        self.builds = 0
        self._kernels: Any = None  # made at the first build: the model loads only then
        self._building: dict[str, threading.Event] = {}  # tables being built, set when done

    @property
    def kernels(self) -> Any:
        """The KernelMemo the builds share."""
        from model.compiler.plan import KernelMemo

        with self._lock:
            if self._kernels is None:
                self._kernels = KernelMemo()
            return self._kernels

    def table(self, scenario: Scenario, compiled: list[int]) -> Any:
        """The service table of `scenario`'s plan with `compiled` shapes (Scenario._table)."""
        from packets.model_specs import fusion_spec, tile_spec

        config = scenario.config
        key = json.dumps(
            [
                repr(scenario.block),
                repr(scenario.hardware),
                fusion_spec(config),
                tile_spec(config),
                list(compiled),
                repr(scenario.fallback_policy),
                config.batch_policy.max_batch,
                sorted(scenario.runtime.workload.shapes.values),
            ],
            sort_keys=True,
        )
        while True:
            with self._lock:  # the cache and the builds in flight seen at one moment
                found = self._cache.get(key)
                if found is not None:
                    return found
                building = self._building.get(key)
                mine = building is None
                if mine:
                    building = self._building[key] = threading.Event()
            if not mine:  # another thread builds it (Tune's tables ahead): wait for that one
                building.wait()
                continue  # then take it from the cache (or build it, if that build failed)
            try:
                found = scenario._table(compiled, self.kernels)
                with self._lock:  # in the cache before it leaves the builds in flight
                    self.builds += 1
                    self._cache.put(key, found)
                return found
            finally:
                with self._lock:
                    del self._building[key]
                building.set()

    def iteration_table(self, scenario: Scenario) -> Any:
        """The serving iteration table of `scenario` (Scenario.iteration_table), memoized by
        what `triage.serving_scenario.iteration_table` reads, and built from the plan's
        iteration-cost cells (`IterationCosts`), which are kept by plan alone: a chunked_prefill
        or kv_cache_tokens edit reuses the plan's table, a max_num_seqs or
        max_num_batched_tokens edit evaluates only the cells its new extent adds (none after
        `prefetch`)."""
        from packets.schema import DistributionService
        from triage.serving_scenario import table_from

        config, serving = scenario.config, scenario.serving
        if isinstance(config.service, DistributionService):
            return None  # pinned service: no table
        plan = self._plan(scenario)
        policy = serving.policy
        key = json.dumps(
            [*plan, policy.max_num_seqs, policy.max_num_batched_tokens], sort_keys=True
        )
        found = self._cache.get(key)
        if found is None:
            found = table_from(self._costs(scenario, plan), serving)
            with self._lock:
                self.builds += 1
            self._cache.put(key, found)
        return found

    @staticmethod
    def _plan(scenario: Scenario) -> list:
        """What a serving plan's iteration-cost cells depend on (not max_num_seqs or
        max_num_batched_tokens)."""
        from packets.model_specs import fusion_spec, tile_spec

        config = scenario.config
        return [
            "iteration",
            repr(scenario.block),
            repr(scenario.hardware),
            fusion_spec(config),
            tile_spec(config),
            scenario.serving.longest_sequence,
            list(config.compiled_shapes.seq_len),
            config.fallback.dispatch_overhead_us,
        ]

    def _costs(self, scenario: Scenario, plan: list) -> Any:
        from triage.serving_scenario import iteration_costs

        key = json.dumps(plan, sort_keys=True)
        with self._lock:  # one set of cells per plan, even when two workers ask at once
            costs = self._cache.get(key)
            if costs is None:
                costs = iteration_costs(
                    scenario.config, scenario.serving, scenario.hardware, scenario.block
                )
                self._cache.put(key, costs)
        return costs

    def prefetch(self, scenario: Scenario) -> None:
        """Evaluate the iteration-cost cells of the next arrow steps (ARROW_STEPS either way)
        of `scenario`'s max_num_seqs and max_num_batched_tokens, so those edits gather their
        tables from kept cells. Off the critical path: call from a worker while idle."""
        from packets.schema import DistributionService
        from triage.serving_scenario import neighbours

        config, serving = scenario.config, scenario.serving
        if serving is None or isinstance(config.service, DistributionService):
            return
        self._costs(scenario, self._plan(scenario)).reserve(neighbours(serving, ARROW_STEPS))


TABLES = TableMemo()
"""The app's service- and iteration-table memo (shared by every subject)."""


def scenario_for(subject: Subject) -> Scenario:
    """The model scenario of a subject, its service tables taken from `TABLES`."""
    from triage.scenario import build_scenario

    scenario = build_scenario(
        subject.loaded, subject.dtype_from, config=subject.config, hardware=subject.hardware
    )
    if scenario.candidate != subject.name:
        import dataclasses

        scenario = dataclasses.replace(scenario, candidate=subject.name)
    if scenario.uses_model:
        # Scenario's tables are cached_properties: filling them in before first use is how
        # the scenario takes memoized tables (the same values it would build itself).
        scenario.__dict__["service_table"] = TABLES.table(scenario, scenario.compiled_shapes)
        scenario.__dict__["all_compiled_table"] = TABLES.table(
            scenario, scenario.all_compiled_shapes
        )
    if scenario.is_serving:
        import contextlib

        # Not runnable as serving (ValueError): its run raises the one-line message itself.
        with contextlib.suppress(ValueError):
            scenario.__dict__["iteration_table"] = TABLES.iteration_table(scenario)
    return scenario


MAX_BATCH_STEPS = (1, -1)
"""The max_batch arrow steps whose service tables Tune builds ahead (`prefetch_tables`)."""


def prefetch_tables(
    subject: Subject,
    steps: tuple[int, ...] = MAX_BATCH_STEPS,
    stop: threading.Event | None = None,
) -> int:
    """Build into `TABLES` the service tables (the plan's and its all-compiled one) of the
    subject's configuration with max_batch moved by each of `steps`, so the next arrow step
    on max_batch finds them built: a max_batch edit changes the table's batch axis, so no
    kernel of the plan before it can be reused (`KernelMemo`), and the two tables were most
    of such an edit's wait for its chart. Blocking, for a worker while the app is idle;
    returns how many tables it built. Sizes outside 1..MAX_BATCH are skipped; once `stop` is
    set (an edit came), no further table is started."""
    import dataclasses

    from packets.schema import MAX_BATCH

    scenario = subject.scenario
    if not scenario.uses_model or scenario.is_serving:
        return 0
    config = scenario.config
    policy = config.batch_policy
    built = TABLES.builds
    compiled, drawn = scenario.compiled_shapes, scenario.all_compiled_shapes
    for step in steps:
        size = policy.max_batch + step
        if not 1 <= size <= MAX_BATCH:
            continue
        moved = config.model_copy(
            update={"batch_policy": policy.model_copy(update={"max_batch": size})}
        )
        neighbour = dataclasses.replace(scenario, config=moved)
        for shapes in (compiled, drawn):
            if stop is not None and stop.is_set():
                return TABLES.builds - built
            TABLES.table(neighbour, shapes)
    return TABLES.builds - built


def prefetch_serving_cells(subject: Subject) -> None:
    """The iteration-cost cells of the next arrow steps of a serving subject's policy
    (`TableMemo.prefetch`); blocking, for a worker while the app is idle."""
    scenario = subject.scenario
    if scenario.is_serving:
        TABLES.prefetch(scenario)


def base_rate_per_s(scenario: Scenario) -> float:
    """The packet's mean arrival rate, 1/s (a trace's: arrivals over its span)."""
    arrivals = scenario.runtime.workload.arrivals
    if arrivals.rate_per_s is not None:
        return float(arrivals.rate_per_s)
    import numpy as np

    trace = np.asarray(arrivals.trace_ms, dtype=np.float64)
    return float((len(trace) - 1) / (trace[-1] - trace[0]) * 1e3)


def compute_preview(subject: Subject) -> LabPreview:
    """Simulate one subject (service tables and the run itself, no summary)."""
    import numpy as np

    from model.runtime.stats import measured, runtime_profiles
    from triage.runs import simulate_scenario

    scenario = subject.scenario
    result = simulate_scenario(scenario)
    requests = result.requests
    window = measured(result)
    latency = requests.finish_ms[window] - requests.arrival_ms[window]
    return LabPreview(
        name=subject.name,
        profiles=runtime_profiles(result),
        latency_ms=np.percentile(latency, LATENCY_PERCENTILES),
        scenario=scenario,
        result=result,
    )


def compute_run(subject: Subject, preview: LabPreview | None = None) -> LabRun:
    """Run one subject: the run summary (with tail attribution), chart profiles, buckets.
    A `preview` of the same subject saves its simulation (the result is the same)."""
    import numpy as np

    from model.compiler.fusion import fusion_groups
    from packets.model_specs import fusion_spec
    from triage.runs import summarize_scenario

    preview = preview or compute_preview(subject)
    scenario = preview.scenario
    report = summarize_scenario(scenario, subject.loaded.name, preview.result)
    table = scenario.service_table
    buckets = None
    if table is not None:
        mix = scenario.runtime.workload.shapes
        weight_of = dict(zip(mix.values, mix.weights, strict=True))
        weights = np.array([weight_of.get(int(s), 0.0) for s in table.shapes])
        buckets = ShapeBuckets(table.shapes, weights, table.compiled_shape, table.fallback)
    return LabRun(
        name=subject.name,
        summary=report.summary,
        run=report.run,
        profiles=preview.profiles,
        latency_ms=preview.latency_ms,
        buckets=buckets,
        kernels_per_layer=len(fusion_groups(scenario.block, fusion_spec(scenario.config))),
        layers=scenario.block.layers,
    )


def is_serving(subject: Subject) -> bool:
    """True when the subject's configuration runs the continuous scheduler (LLM serving)."""
    return subject.config.batch_policy.scheduler == "continuous"


def compute_serving_run(subject: Subject, *, attribution: bool = False) -> ServingRun:
    """Run a serving subject's continuous scheduler (the run `workbench run` shows; with
    `attribution`, its Shapley tail attribution and bottleneck class too, as Diagnose shows)
    and keep its summary and chart series (not its per-request arrays)."""
    import numpy as np

    from model.runtime.serving_profiles import serving_profiles
    from model.runtime.serving_rules import kv_bytes_per_token, weight_bytes_total
    from triage.runs import run_serving_scenario

    scenario = subject.scenario
    report = run_serving_scenario(scenario, subject.loaded.name, attribution=attribution)
    summary = report.summary
    kv = summary["kv_cache"]
    t_ms = np.asarray(kv["timeline"]["t_ms"], dtype=np.float64)
    return ServingRun(
        name=subject.name,
        summary=summary,
        kv_time_s=(t_ms - (t_ms[0] if len(t_ms) else 0.0)) / 1e3,
        kv_occupancy=np.asarray(kv["timeline"]["occupancy"], dtype=np.float64),
        kv_capacity_tokens=kv["capacity_tokens_per_engine"],
        profiles=serving_profiles(report.result, LATENCY_PERCENTILES),
        kv_bytes_per_token=kv_bytes_per_token(scenario.block),
        weight_bytes=weight_bytes_total(scenario.block),
        hbm_gib=float(scenario.hardware.hbm_gib),
    )


def compute_load_curve(
    subject: Subject,
    factors: tuple[float, ...] = LOAD_FACTORS,
    *,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> LoadCurve:
    """p99/p95/throughput at each load factor; runs go in chunks of one per CPU (they run in
    parallel), `progress(done, total)` after each chunk, Cancelled when `cancelled()` turns
    true between chunks."""
    import dataclasses
    import os

    import numpy as np

    from model.runtime.sweep import run_sweep

    scenario = subject.scenario
    runtime, table = scenario.runtime, scenario.service_table
    rates = [base_rate_per_s(scenario) * f for f in factors]
    configs = [
        dataclasses.replace(
            runtime,
            workload=dataclasses.replace(
                runtime.workload,
                arrivals=dataclasses.replace(runtime.workload.arrivals, rate_per_s=rate),
            ),
        )
        for rate in rates
    ]
    chunk = max(1, os.cpu_count() or 1)
    rows: list[dict] = []
    for start in range(0, len(configs), chunk):  # chunks: progress and cancellation between
        if cancelled is not None and cancelled():
            raise Cancelled(f"load curve cancelled after {start} of {len(configs)} points")
        part = configs[start : start + chunk]
        rows += run_sweep(part, [table] * len(part)).to_dicts()
        if progress is not None:
            progress(len(rows), len(configs))
    return LoadCurve(
        factors=np.array(factors, dtype=np.float64),
        rate_per_s=np.array(rates, dtype=np.float64),
        p99_ms=np.array([r["latency_p99_ms"] for r in rows]),
        p95_ms=np.array([r["latency_p95_ms"] for r in rows]),
        throughput_per_s=np.array([r["throughput_per_s"] for r in rows]),
    )


def worksheet_point(subject: Subject) -> tuple[int, int]:
    """(batch, seq_len) the worksheet is read at: the configuration's max batch and the mix's
    most common seq_len (as `workbench worksheet` defaults)."""
    mix = subject.loaded.packet.inputs.workload.shapes.seq_len
    seq_len = mix.values[max(range(len(mix.values)), key=lambda i: mix.weights[i])]
    return subject.config.batch_policy.max_batch, seq_len


def compute_worksheet(subject: Subject, baseline: Subject) -> dict:
    """The fusion & tile-plan worksheet (handoff-worksheet/1) of `subject` against `baseline`."""
    return subject.scenario.worksheet(baseline.scenario, *worksheet_point(subject))


def compute_serving_worksheet(
    working: WorkingPacket, target: Subject, baseline: Subject, run: ServingRun
) -> dict:
    """The serving worksheet (triage.serving_sheet, handoff-serving-worksheet/1) of `target`
    against `baseline` (subjects of `working`) at the point of `run`, target's serving run: the
    baseline's plan priced at the target's policy (`baseline_plan_table`)."""
    from triage.serving_sheet import baseline_plan_table, serving_worksheet

    scenario = target.scenario
    base_table = baseline_plan_table(
        scenario,
        baseline.scenario,
        lambda hybrid: subject(working, hybrid, name="baseline plan").scenario,
    )
    return serving_worksheet(
        run.summary, scenario, baseline.scenario, scenario.iteration_table, base_table
    )


class Lab:
    """Cached runs, load curves and worksheets for the app (one per app; thread-safe).

    Attributes:
        model_runs: how many runs were computed (not served from the cache), for tests and
            benchmarks.
    """

    def __init__(self, entries: int = CACHE_ENTRIES) -> None:
        self._runs = _Cache(entries)
        self._previews = _Cache(PREVIEW_ENTRIES)
        self._curves = _Cache(entries)
        self._sheets = _Cache(entries)
        self._serving = _Cache(entries)
        self._diagnoses = _Cache(entries)
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self.model_runs = 0

    def cached_run(self, subject: Subject) -> LabRun | None:
        """The run of `subject` if it was computed already (never computes)."""
        return self._runs.get(subject.key)

    def run(self, subject: Subject) -> LabRun:
        """The run of `subject`, computed on first request (blocking: call from a worker);
        completes a preview of it when there is one."""
        found = self._runs.get(subject.key)
        if found is not None:
            return found
        with self._key_lock(subject.key):  # a second caller waits for the first's result
            found = self._runs.get(subject.key)
            if found is None:
                found = compute_run(subject, self._previews.get(subject.key))
                with self._lock:
                    self.model_runs += 1
                self._runs.put(subject.key, found)
                self._previews.discard(subject.key)  # its per-request arrays are not needed
        return found

    def preview(self, subject: Subject) -> LabRun | LabPreview:
        """The run of `subject` if computed already, else its simulation alone (about half
        the time of a run: charts can show an edit before its tail attribution is done).
        Blocking: call from a worker, then `run` for the rest."""
        found = self._runs.get(subject.key) or self._previews.get(subject.key)
        if found is not None:
            return found
        with self._key_lock(subject.key):
            found = self._runs.get(subject.key) or self._previews.get(subject.key)
            if found is None:
                found = compute_preview(subject)
                self._previews.put(subject.key, found)
        return found

    def cached_serving_run(self, subject: Subject) -> ServingRun | None:
        """The serving run of `subject` if it was computed already (never computes)."""
        return self._serving.get(subject.key)

    def serving_run(self, subject: Subject) -> ServingRun:
        """The serving run of `subject` (see `compute_serving_run`), computed on first request
        (blocking: call from a worker) and cached by its inputs."""
        found = self._serving.get(subject.key)
        if found is not None:
            return found
        with self._key_lock(subject.key):
            found = self._serving.get(subject.key)
            if found is None:
                found = compute_serving_run(subject)
                with self._lock:
                    self.model_runs += 1
                self._serving.put(subject.key, found)
        return found

    def cached_serving_diagnosis(self, subject: Subject) -> ServingRun | None:
        """The attributed serving run of `subject` if computed already (never computes)."""
        return self._diagnoses.get(subject.key)

    def serving_diagnosis(self, subject: Subject) -> ServingRun:
        """The serving run of `subject` with its tail attribution and bottleneck class (the
        counterfactual re-runs: Diagnose only, not every Tune edit), computed on first request
        (blocking: call from a worker) and cached by its inputs."""
        found = self._diagnoses.get(subject.key)
        if found is not None:
            return found
        with self._key_lock(f"diagnosis:{subject.key}"):
            found = self._diagnoses.get(subject.key)
            if found is None:
                found = compute_serving_run(subject, attribution=True)
                with self._lock:
                    self.model_runs += 1
                self._diagnoses.put(subject.key, found)
        return found

    def _key_lock(self, key: str) -> threading.Lock:
        with self._lock:
            if len(self._key_locks) > 4 * CACHE_ENTRIES:  # only idle keys' locks are dropped
                self._key_locks = {k: v for k, v in self._key_locks.items() if v.locked()}
            return self._key_locks.setdefault(key, threading.Lock())

    def load_curve(
        self,
        subject: Subject,
        *,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> LoadCurve:
        """p99 vs load over LOAD_FACTORS (see `compute_load_curve`), cached."""
        found = self._curves.get(subject.key)
        if found is None:
            found = compute_load_curve(subject, progress=progress, cancelled=cancelled)
            self._curves.put(subject.key, found)
        elif progress is not None:
            progress(len(found.factors), len(found.factors))
        return found

    def cached_worksheet(self, subject: Subject, baseline: Subject) -> dict | None:
        """The worksheet of `subject` against `baseline` if computed already."""
        return self._sheets.get((subject.key, baseline.key))

    def worksheet(self, subject: Subject, baseline: Subject) -> dict:
        """The worksheet of `subject` against `baseline` (see `compute_worksheet`), cached."""
        key = (subject.key, baseline.key)
        found = self._sheets.get(key)
        if found is None:
            found = compute_worksheet(subject, baseline)
            self._sheets.put(key, found)
        return found

    def cached_serving_worksheet(self, target: Subject, baseline: Subject) -> dict | None:
        """The serving worksheet of `target` against `baseline` if computed already."""
        return self._sheets.get(("serving", target.key, baseline.key))

    def serving_worksheet(self, working: WorkingPacket, target: Subject, baseline: Subject) -> dict:
        """The serving worksheet (`compute_serving_worksheet`) at target's serving run, cached
        beside the worksheets. Blocking: call from a worker."""
        key = ("serving", target.key, baseline.key)
        found = self._sheets.get(key)
        if found is None:
            found = compute_serving_worksheet(working, target, baseline, self.serving_run(target))
            self._sheets.put(key, found)
        return found

    def has_baseline(self, working: WorkingPacket) -> bool:
        """True when the baseline of `working` has been run for its current inputs (a serving
        packet's: its serving run)."""
        base = subject(working)
        return (self.cached_run(base) or self.cached_serving_run(base)) is not None

    def warm_up(self) -> None:
        """Import the model and compile (or load) its numba kernels: call from a background
        worker at start, so the first run does not wait for them."""
        import model.runtime.sweep  # noqa: F401  (polars, for the load curve)
        import triage.runs  # noqa: F401
        from model.runtime.kernel import warm_up

        warm_up()
