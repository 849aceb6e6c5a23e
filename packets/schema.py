"""The handoff-packet format, version 1, as pydantic models.

Field order here is the order the canonical writer uses. Units are in the field names
(`_ms`, `_us`, `_gbs` = GB/s, `_kib`, `_mib`, `_per_s`). The names listed as a contract in
packets/FORMAT.md are relied on by scripts and must not change within format version 1.

No `from __future__ import annotations` here: pydantic then evaluates each of the ~260 field
annotations from its text while the classes are built at import (~10% of that time, which every
command and the app's start pay). The one forward reference is quoted.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from model.compiler.hardware import ARCHITECTURES, FIELD_DOCS
from model.compiler.library import LIBRARIES

from .fields import (
    Bool,
    Dtype,
    Float,
    Fraction,
    Principal,
    Seed,
    Slug,
    Text,
    choice,
    integer,
    number,
    tagged,
)

FORMAT = "handoff-packet/1"
TOPICS = ("operator-fusion-and-tiling", "compiler-runtime-mapping")
PLACEMENTS = ("central-queue", "round-robin", "random", "least-loaded", "shape-affinity")
FUSION_PRESETS = ("none", "standard", "aggressive")
BLOCK_KINDS = ("llama-decoder", "mlp", "attention")

# Owner roles per topic, each with the closure artifact that role carries.
ROLES_BY_TOPIC: dict[str, dict[str, str]] = {
    "operator-fusion-and-tiling": {
        "ml-compiler-engineer": "design rationale and trade-offs",
        "kernel-performance-owner": "profile traces and bottleneck map",
        "runtime-systems-engineer": "test report and closure memo",
    },
    "compiler-runtime-mapping": {
        "compiler-lead": "design rationale and trade-offs",
        "runtime-lead": "profile traces and bottleneck map",
        "observability-engineer": "test report and closure memo",
    },
}
ALL_ROLES = tuple(role for roles in ROLES_BY_TOPIC.values() for role in roles)

MAX_REQUESTS = 10_000_000  # ~2.1 GB peak for one run (model/runtime/README.md "Memory"); beyond that use several runs

# Plausibility bounds: every number a packet gives has a physical range (packets/FORMAT.md
# "Numeric ranges" gives the reason for each). Each is far outside any real deployment, yet
# keeps every product the model forms finite and every simulated time resolvable in float64.
MAX_HIDDEN = 65_536  # 4x Llama-3.1-405B's 16,384, the widest published dense model
MAX_FFN_HIDDEN = 262_144  # ~5x Llama-3.1-405B's 53,248
MAX_HEADS = 1_024  # query or KV heads: 8x Llama-3.1-405B's 128
MAX_HEAD_DIM = 1_024  # 4x the widest in use (256); an attention tile holds Q, K, V rows of it
MAX_LAYERS = 1_024  # 8x Llama-3.1-405B's 126
MAX_SEQ_LEN = 16_777_216  # 2^24 tokens: 1.6x the longest announced context (10M tokens)
MAX_TILE_DIM = 4_096  # 16x the widest tile CUTLASS or XLA's autotuner searches (256)
MAX_BATCH = 1_024  # Triton's max_batch_size in practice; batch tables are built up to it
MIN_RATE_PER_S = 1e-3  # one request per ~17 min: 10^7 of them span 10^10 s, ~2 us float64 ulp
MAX_RATE_PER_S = 1e7  # one per 100 ns: 100x past any kernel's launch floor (~1 us)
MIN_CV, MAX_CV = 0.01, 100.0  # gamma shape 1/cv^2 from 10^4 (a clock) to 10^-4 (bursts)
MIN_MS, MAX_MS = 1e-3, 1e7  # 1 us (one kernel launch) to ~2.8 h: SLA targets, service means
MAX_SERVICE_CV = 100.0  # lognormal sigma = sqrt(ln(1 + cv^2)) ~ 3.0 at cv 100
MAX_COMPILE_STALL_MS = 3.6e6  # one hour of JIT compile for one shape
MAX_DISPATCH_US = FIELD_DOCS["launch_overhead_us"][3]  # as the launch overhead: 0.1 s
SCHEDULERS = ("dynamic", "continuous")  # Triton-style batches; LLM-serving iterations
MAX_KV_TOKENS = 1_000_000_000  # ~128 TB of Llama-3-8B KV: far beyond any device's HBM
MAX_QUEUE_DELAY_MS = 60_000.0  # a batcher that holds a request a minute is no latency server
MAX_LOAD_FACTOR = 100.0  # validation loads are multiples of the packet's rate
MAX_WINDOW_S = 604_800.0  # rollback windows up to one week
MAX_SEARCH_TRIALS = (
    1_000_000  # `workbench search` trials: the largest design spaces are ~10^6 points
)


def envelope_number(name: str, integer_field: bool = False) -> Any:
    """A hardware envelope field bounded by the model's own FIELD_DOCS range."""
    _unit, _meaning, low, high = FIELD_DOCS[name]
    return integer(ge=low, le=high) if integer_field else number(ge=low, le=high)


PosCount = integer(gt=0, le=MAX_REQUESTS)  # request counts
Ms = number(ge=MIN_MS, le=MAX_MS)
RatePerS = number(ge=MIN_RATE_PER_S, le=MAX_RATE_PER_S)
SeqLen = integer(gt=0, le=MAX_SEQ_LEN)
TileDim = integer(gt=0, le=MAX_TILE_DIM)
BatchSize = integer(gt=0, le=MAX_BATCH)


class Strict(BaseModel):
    """Base for every section: unknown keys are errors, types are never coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Artifact(Strict):
    """An owner's closure artifact: where it lives and what it concludes."""

    ref: Text = Field(description="Path or URL of the artifact.")
    summary: Text | None = Field(default=None, description="One-paragraph conclusion.")


class Owner(Strict):
    """An owner who signs the packet for one role."""

    role: choice(*ALL_ROLES)  # type: ignore[valid-type]
    name: Text
    principal: Principal = Field(description="E-mail-like identity a signature is bound to.")
    artifact: Artifact | None = None


class Block(Strict):
    """The representative model block. Dimensions a kind does not use must be left out."""

    kind: choice(*BLOCK_KINDS)  # type: ignore[valid-type]
    phase: choice("prefill", "decode", "serving")  # type: ignore[valid-type]
    dtype: Dtype
    hidden: integer(gt=0, le=MAX_HIDDEN)  # type: ignore[valid-type]
    heads: integer(gt=0, le=MAX_HEADS) | None = None  # type: ignore[valid-type]
    kv_heads: integer(gt=0, le=MAX_HEADS) | None = None  # type: ignore[valid-type]
    head_dim: integer(gt=0, le=MAX_HEAD_DIM) | None = None  # type: ignore[valid-type]
    ffn_hidden: integer(gt=0, le=MAX_FFN_HIDDEN) | None = None  # type: ignore[valid-type]
    layers: integer(gt=0, le=MAX_LAYERS) = Field(  # type: ignore[valid-type]
        default=1, description="Times the block runs per request."
    )


class Arrivals(Strict):
    """Request arrival process."""

    process: choice("poisson", "gamma", "trace")  # type: ignore[valid-type]
    rate_per_s: RatePerS | None = Field(default=None, description="Mean arrival rate, 1/s.")
    cv: number(ge=MIN_CV, le=MAX_CV) | None = Field(  # type: ignore[valid-type]
        default=None, description="Gamma inter-arrival CV."
    )
    trace: Text | None = Field(
        default=None,
        description="File of arrival times in ms, one per line, relative to the packet.",
    )


class ShapeMix(Strict):
    """Discrete distribution of one runtime shape dimension."""

    values: list[SeqLen] = Field(min_length=1)  # type: ignore[valid-type]
    weights: list[Fraction] = Field(min_length=1)


class Shapes(Strict):
    """The changing input shapes. `seq_len` is prompt tokens (prefill) or KV length (decode)."""

    seq_len: ShapeMix


class LengthMix(Strict):
    """Discrete distribution of a token length (serving prompts and outputs)."""

    values: list[SeqLen] = Field(min_length=1)  # type: ignore[valid-type]
    weights: list[Fraction] = Field(min_length=1)


class Generation(Strict):
    """What each serving request is: a prompt, then output tokens (the first from the prefill)."""

    prompt_len: LengthMix
    output_len: LengthMix


class Workload(Strict):
    """The workload profile."""

    block: Block
    arrivals: Arrivals
    shapes: Shapes
    generation: Generation | None = Field(
        default=None, description="Prompt and output length mixes (block phase serving)."
    )
    shape_source: choice("production", "synthetic") = Field(  # type: ignore[valid-type]
        default="synthetic",
        description="Whether the shape mix comes from production traffic or was made up.",
    )
    requests: PosCount  # type: ignore[valid-type]
    warmup_fraction: number(ge=0, le=0.9) = Field(  # type: ignore[valid-type]
        default=0.0, description="Share of the earliest requests left out of statistics."
    )


class Sla(Strict):
    """Service-level target, judged on the tail."""

    p95_ms: Ms  # type: ignore[valid-type]
    p99_ms: Ms  # type: ignore[valid-type]
    min_throughput_per_s: RatePerS | None = None  # type: ignore[valid-type]
    ttft_p95_ms: Ms | None = Field(default=None, description="Time-to-first-token p95, ms.")  # type: ignore[valid-type]
    tpot_p95_ms: Ms | None = Field(default=None, description="Time-per-output-token p95, ms.")  # type: ignore[valid-type]


class Quality(Strict):
    """Model quality threshold and the measured quality per precision (the evidence)."""

    metric: Text
    threshold: Float
    higher_is_better: Bool = True
    measured: dict[Dtype, Float] = Field(default_factory=dict)
    evidence: Text | None = Field(default=None, description="Where the measurements come from.")


class Precision(Strict):
    """Numeric precision the block runs in and its quality gate."""

    dtype: Dtype
    quality: Quality


class Metadata(Strict):
    """Software and platform versions the evidence was produced with (text, kept as written)."""

    compiler: Text
    runtime: Text
    firmware: Text
    model_revision: Text
    power_mode: Text


# Hardware envelope fields (model/compiler/hardware.py FIELD_DOCS gives units and ranges),
# shared by a packet's `inputs.hardware` overrides and hardware files.
ENVELOPE_FIELDS: dict[str, Any] = {
    "cores": (
        envelope_number("cores", True) | None,
        Field(default=None, description="Placement targets."),
    ),
    "units_per_core": (envelope_number("units_per_core", True) | None, None),
    "peak_tflops": (dict[Dtype, envelope_number("peak_tflops")] | None, None),  # type: ignore[misc]
    "vector_tflops": (envelope_number("vector_tflops") | None, None),
    "hbm_gbs": (envelope_number("hbm_gbs") | None, None),
    "hbm_gib": (envelope_number("hbm_gib") | None, None),
    "cache_gbs": (envelope_number("cache_gbs") | None, None),
    "sram_kib_per_unit": (envelope_number("sram_kib_per_unit") | None, None),
    "shared_cache_mib": (envelope_number("shared_cache_mib") | None, None),
    "launch_overhead_us": (envelope_number("launch_overhead_us") | None, None),
    "min_kernel_us": (envelope_number("min_kernel_us") | None, None),
    "clock_scale": (envelope_number("clock_scale") | None, None),
    "tile_granule": (envelope_number("tile_granule", True) | None, None),
    "compute_efficiency": (envelope_number("compute_efficiency") | None, None),
    "memory_efficiency": (envelope_number("memory_efficiency") | None, None),
    "fill_latency_us": (envelope_number("fill_latency_us") | None, None),
    "cache_efficiency": (envelope_number("cache_efficiency") | None, None),
    "gemm_library": (Literal[tuple(LIBRARIES)] | None, None),  # type: ignore[valid-type]
    # The mechanism fields of issue 11 (spec-sheet figures a hardware file may restate).
    "matrix_flops_per_clock": (envelope_number("matrix_flops_per_clock") | None, None),
    "sustained_clock_ratio": (envelope_number("sustained_clock_ratio") | None, None),
    "cluster_size": (envelope_number("cluster_size", True) | None, None),
    "tf32_tflops": (envelope_number("tf32_tflops") | None, None),
    "architecture": (Literal[ARCHITECTURES] | None, None),  # type: ignore[valid-type]
    "allow_tf32": (Bool | None, None),
}

Hardware = create_model(
    "Hardware",
    __base__=Strict,
    __doc__="Hardware envelope: a preset, a hardware YAML file, or explicit fields (overrides).",
    preset=(Text | None, None),
    file=(Text | None, Field(default=None, description="Hardware YAML, relative to the packet.")),
    source=(Text | None, Field(default=None, description="Where the figures come from.")),
    **ENVELOPE_FIELDS,
)


def envelope_overrides(section: BaseModel) -> dict[str, Any]:
    """The envelope fields a hardware section or file gives, as plain values."""
    return {
        name: getattr(section, name)
        for name in ENVELOPE_FIELDS
        if getattr(section, name) is not None
    }


class Inputs(Strict):
    """Everything the packet's claims rest on."""

    workload: Workload
    sla: Sla
    precision: Precision
    metadata: Metadata
    hardware: Hardware


class GemmTile(Strict):
    """A GEMM tile: output block m x n, reduction step k."""

    m: TileDim  # type: ignore[valid-type]
    n: TileDim  # type: ignore[valid-type]
    k: TileDim  # type: ignore[valid-type]


class AttentionTile(Strict):
    """An attention tile: query block and key/value block lengths."""

    q: TileDim  # type: ignore[valid-type]
    kv: TileDim  # type: ignore[valid-type]


def _tile_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "auto"
    if isinstance(value, dict):
        return "attention" if ("q" in value or "kv" in value) else "gemm"
    if isinstance(value, GemmTile):
        return "gemm"
    if isinstance(value, AttentionTile):
        return "attention"
    return None


Tile = tagged(_tile_kind, gemm=GemmTile, attention=AttentionTile, auto=choice("auto"))


def _fusion_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "preset"
    if isinstance(value, list | tuple):
        return "groups"
    return None


Fusion = tagged(
    _fusion_kind,
    preset=choice(*FUSION_PRESETS),
    groups=list[list[Text]],
)


class CompiledShapes(Strict):
    """Shape buckets the compiler built kernels for; anything larger takes the fallback path."""

    seq_len: list[SeqLen] = Field(min_length=1)  # type: ignore[valid-type]


class Fallback(Strict):
    """The generic path for shapes outside every compiled bucket."""

    compile_stall_ms: number(ge=0, le=MAX_COMPILE_STALL_MS) = Field(  # type: ignore[valid-type]
        default=0.0, description="One-time JIT compile stall per new shape, ms."
    )
    dispatch_overhead_us: number(ge=0, le=MAX_DISPATCH_US) = Field(  # type: ignore[valid-type]
        default=0.0, description="Extra host dispatch per kernel on the generic path, us."
    )


def _dynamic_requires_timer(schema: dict[str, Any]) -> None:
    """JSON Schema: max_batch and max_queue_delay_ms are required unless scheduler is
    continuous (which fills them in: see BatchPolicy)."""
    needed = ["max_batch", "max_queue_delay_ms"]
    schema["required"] = [r for r in schema.get("required", []) if r not in needed]
    schema["if"] = {"not": {"properties": {"scheduler": {"const": "continuous"}},
                            "required": ["scheduler"]}}  # fmt: skip
    schema["then"] = {"required": needed}


class BatchPolicy(Strict):
    """Dynamic batching, Triton semantics; or, with `scheduler: continuous`, iteration-level
    batching of LLM serving (max_batch then defaults to max_num_seqs and the delay to 0, the
    request-level batcher the same packet compares against)."""

    model_config = ConfigDict(
        extra="forbid", strict=True, frozen=True, json_schema_extra=_dynamic_requires_timer
    )

    scheduler: choice(*SCHEDULERS) = "dynamic"  # type: ignore[valid-type]
    max_batch: BatchSize  # type: ignore[valid-type]
    max_queue_delay_ms: number(ge=0, le=MAX_QUEUE_DELAY_MS)  # type: ignore[valid-type]
    bucketing: Bool = Field(default=False, description="Keep each batch within one shape bucket.")
    max_num_seqs: BatchSize | None = Field(default=None, description="Sequences per iteration.")  # type: ignore[valid-type]
    max_num_batched_tokens: integer(gt=0, le=MAX_SEQ_LEN) | None = Field(  # type: ignore[valid-type]
        default=None, description="Tokens (decode steps + prefill) per iteration."
    )
    chunked_prefill: Bool | None = None
    kv_cache_tokens: integer(gt=0, le=MAX_KV_TOKENS) | None = Field(  # type: ignore[valid-type]
        default=None, description="KV-cache capacity per engine, tokens (default: HBM left)."
    )

    @model_validator(mode="before")
    @classmethod
    def _continuous_defaults(cls, data: Any) -> Any:
        """Continuous: max_batch defaults to max_num_seqs, the delay to 0 (dynamic: both stay
        required, with the schema's own 'required field is missing')."""
        if isinstance(data, dict) and data.get("scheduler") == "continuous":
            data = dict(data)
            seqs = data.get("max_num_seqs")
            ok = isinstance(seqs, int) and not isinstance(seqs, bool) and 0 < seqs <= MAX_BATCH
            data.setdefault("max_batch", seqs if ok else 1)
            data.setdefault("max_queue_delay_ms", 0.0)
        return data


class ModelService(Strict):
    """Service times come from the compile-plan model."""

    source: choice("model")  # type: ignore[valid-type]


class DistributionService(Strict):
    """Service times pinned to a distribution (capacity planning, queueing-theory checks)."""

    source: choice("distribution")  # type: ignore[valid-type]
    dist: choice("exponential", "deterministic", "lognormal")  # type: ignore[valid-type]
    mean_ms: Ms  # type: ignore[valid-type]
    cv: number(ge=0, le=MAX_SERVICE_CV) | None = None  # type: ignore[valid-type]


def _service_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        source = value.get("source")
        return str(source) if source in ("model", "distribution") else None
    if isinstance(value, ModelService):
        return "model"
    if isinstance(value, DistributionService):
        return "distribution"
    return None


Service = tagged(_service_kind, model=ModelService, distribution=DistributionService)


class Config(Strict):
    """A complete deployable configuration: the baseline, or a candidate applied to it."""

    fusion: Fusion  # type: ignore[valid-type]
    tiles: dict[Text, Tile] = Field(default_factory=dict)  # type: ignore[valid-type]
    compiled_shapes: CompiledShapes
    fallback: Fallback = Field(default_factory=Fallback)
    batch_policy: BatchPolicy
    placement: choice(*PLACEMENTS)  # type: ignore[valid-type]
    service: Service = Field(default_factory=lambda: ModelService(source="model"))  # type: ignore[valid-type]


class FallbackPatch(Strict):
    """Fields of `fallback` a candidate changes."""

    compile_stall_ms: number(ge=0, le=MAX_COMPILE_STALL_MS) | None = None  # type: ignore[valid-type]
    dispatch_overhead_us: number(ge=0, le=MAX_DISPATCH_US) | None = None  # type: ignore[valid-type]


class BatchPolicyPatch(Strict):
    """Fields of `batch_policy` a candidate changes."""

    max_batch: BatchSize | None = None  # type: ignore[valid-type]
    max_queue_delay_ms: number(ge=0, le=MAX_QUEUE_DELAY_MS) | None = None  # type: ignore[valid-type]
    bucketing: Bool | None = None
    scheduler: choice(*SCHEDULERS) | None = None  # type: ignore[valid-type]
    max_num_seqs: BatchSize | None = None  # type: ignore[valid-type]
    max_num_batched_tokens: integer(gt=0, le=MAX_SEQ_LEN) | None = None  # type: ignore[valid-type]
    chunked_prefill: Bool | None = None
    kv_cache_tokens: integer(gt=0, le=MAX_KV_TOKENS) | None = None  # type: ignore[valid-type]


class Candidate(Strict):
    """A named change against the baseline. Only the knobs it names differ from the baseline;
    `tiles` entries are merged per op (`auto` returns an op to the autotuner)."""

    name: Slug
    description: Text
    dtype: Dtype | None = Field(default=None, description="Precision change, if any.")
    fusion: Fusion | None = None  # type: ignore[valid-type]
    tiles: dict[Text, Tile] | None = None  # type: ignore[valid-type]
    compiled_shapes: CompiledShapes | None = None
    fallback: FallbackPatch | None = None
    batch_policy: BatchPolicyPatch | None = None
    placement: choice(*PLACEMENTS) | None = None  # type: ignore[valid-type]
    service: Service | None = None  # type: ignore[valid-type]
    provenance: "SearchProvenance | None" = Field(
        default=None, description="How `workbench search` found it (absent for hand-made ones)."
    )


PRIMARY_METRICS = (
    "p99_ms",
    "p95_ms",
    "p50_ms",
    "mean_ms",
    "throughput_per_s",
    "ttft_p95_ms",
    "tpot_p95_ms",
    "tokens_per_s",
)
SERVING_METRICS = ("ttft_p95_ms", "tpot_p95_ms", "tokens_per_s")
"""Primary metrics only a serving (continuous-batching) run has."""
REVIEW_QUESTION = (
    "Which first-principles bottleneck class explains the symptom, and which artifact proves "
    "it reproducibly?"
)


class WorkloadSlice(Strict):
    """The reproducible slice a claim rests on: configuration, seed, load, shapes, command."""

    config: Text
    seed: Seed
    requests: PosCount  # type: ignore[valid-type]
    rate_per_s: RatePerS | None = None  # type: ignore[valid-type]
    shape_mix: Text
    command: Text


class TailFigures(Strict):
    """Tail first: p99, p95, then p50 and mean (ms); throughput (1/s); SLA verdict. A serving
    run adds TTFT and TPOT p95 (ms) and tokens/s; p99..mean are then end-to-end latency."""

    p99_ms: Float
    p95_ms: Float
    p50_ms: Float
    mean_ms: Float
    throughput_per_s: Float
    sla_ok: Bool
    ttft_p95_ms: Float | None = None
    tpot_p95_ms: Float | None = None
    tokens_per_s: Float | None = None


class ClassFinding(Strict):
    """One bottleneck class with the metric and threshold that decided it."""

    bottleneck: Text
    metric: Text
    value: Float
    threshold: Text
    evidence: dict[Text, Float] = Field(default_factory=dict)


class Classification(Strict):
    """Evidence-backed bottleneck classification of the baseline (tail first)."""

    inputs_sha256: Text
    question: Text = REVIEW_QUESTION
    primary: ClassFinding
    secondary: list[ClassFinding] = Field(default_factory=list)
    tail: TailFigures
    slice: WorkloadSlice
    artifact: Text | None = Field(default=None, description="Artifact that proves it.")


class Alternative(Strict):
    """A candidate that was not chosen, with the measured reason it lost."""

    candidate: Text
    knobs: list[Text] = Field(default_factory=list)
    tail: TailFigures
    reason: Text


class SearchProvenance(Strict):
    """Where a searched candidate came from: the objective, the trials and seed, the command
    that reproduces it, and the best alternatives it beat (cited by `propose`)."""

    objective: choice("p99", "p95", "throughput", "ttft_p95", "tpot_p95", "tokens")  # type: ignore[valid-type]
    trials: integer(gt=0, le=MAX_SEARCH_TRIALS)  # type: ignore[valid-type]
    seed: Seed
    command: Text
    rejected: list[Alternative] = Field(default_factory=list)


Candidate.model_rebuild()


class Mitigation(Strict):
    """The owner-signed mitigation proposal."""

    inputs_sha256: Text
    candidate: Text
    rationale: Text
    trade_offs: list[Text] = Field(default_factory=list)
    primary_metric: choice(*PRIMARY_METRICS)  # type: ignore[valid-type]
    slice: WorkloadSlice
    baseline: TailFigures
    chosen: TailFigures
    knobs: list[Text] = Field(default_factory=list)
    broad_tuning_bundle: Bool = False
    rejected: list[Alternative] = Field(default_factory=list)


class NamedShapeMix(Strict):
    """A shape mix the validation matrix ran: production (the packet's) or a stress mix."""

    name: Text
    source: choice("production", "synthetic")  # type: ignore[valid-type]
    values: list[SeqLen]  # type: ignore[valid-type]
    weights: list[Fraction]


class CellMiss(Strict):
    """A target a validation cell missed: the metric, its value, and the target it needed."""

    metric: choice("p95_ms", "p99_ms", "throughput_per_s", "ttft_p95_ms", "tpot_p95_ms")  # type: ignore[valid-type]
    value: Float
    target: Float
    basis: Text = Field(description="Where the target comes from (SLA field, offered load).")


class MatrixCell(Strict):
    """One scenario x configuration of the validation matrix."""

    load_factor: number(gt=0, le=MAX_LOAD_FACTOR)  # type: ignore[valid-type]
    rate_per_s: number(gt=0, le=MAX_LOAD_FACTOR * MAX_RATE_PER_S) | None = None  # type: ignore[valid-type]
    shape_mix: Text
    seed: Seed
    config: Text
    p95_ms: Float
    p99_ms: Float
    throughput_per_s: Float
    fallback_rate: Float
    hbm_peak_demand_ratio: Float | None = None
    ttft_p95_ms: Float | None = Field(
        default=None, description="Serving: time to first token p95, ms."
    )
    tpot_p95_ms: Float | None = Field(
        default=None, description="Serving: time per output token p95, ms."
    )
    tokens_per_s: Float | None = Field(
        default=None, description="Serving: output tokens per second."
    )
    preemption_rate: Float | None = Field(
        default=None, description="Serving: KV-cache preemptions per measured request."
    )
    kv_peak_ratio: Float | None = Field(
        default=None, description="Serving: KV-cache peak over one engine's capacity."
    )
    sla_ok: Bool
    missed: list[CellMiss] = Field(
        default_factory=list, description="Each target the cell missed (empty when sla_ok)."
    )


class MemoryCheck(Strict):
    """Fusion validated against memory constraints (SRAM capacity, spill, HBM bursts)."""

    batch: BatchSize  # type: ignore[valid-type]
    seq_len: SeqLen  # type: ignore[valid-type]
    sram_over_capacity: list[Text] = Field(default_factory=list)
    spill_mb_per_request: number(ge=0)  # type: ignore[valid-type]
    baseline_spill_mb_per_request: number(ge=0)  # type: ignore[valid-type]
    hbm_peak_demand_ratio_max: Float | None = None
    baseline_hbm_peak_demand_ratio_max: Float | None = None
    kv_peak_ratio_max: Float | None = None
    baseline_kv_peak_ratio_max: Float | None = None
    preemption_rate_max: Float | None = None
    baseline_preemption_rate_max: Float | None = None
    verdict: Text


class ValidationMatrix(Strict):
    """Load levels x shape mixes x seeds, each run for the baseline and the candidate."""

    inputs_sha256: Text
    candidate: Text
    requests: PosCount  # type: ignore[valid-type]
    load_factors: list[number(gt=0, le=MAX_LOAD_FACTOR)]  # type: ignore[valid-type]
    shape_mixes: list[NamedShapeMix]
    seeds: list[Seed]
    cells: list[MatrixCell]
    memory: MemoryCheck


class RollbackTrigger(Strict):
    """Revert when a metric crosses a threshold for a window (metric names as in run JSON)."""

    metric: Text
    comparison: choice(">", "<")  # type: ignore[valid-type]
    threshold: Float
    window_s: number(gt=0, le=MAX_WINDOW_S)  # type: ignore[valid-type]
    action: Text
    derived_from: Text


class Override(Strict):
    """An owner overriding the computed recommendation, with the written rationale."""

    role: choice(*ALL_ROLES)  # type: ignore[valid-type]
    principal: Principal
    decision: choice("ship", "ship-guarded", "hold")  # type: ignore[valid-type]
    rationale: Text
    time: Text


class Release(Strict):
    """The release recommendation by the documented rule, and any recorded override."""

    inputs_sha256: Text
    recommendation: choice("ship", "ship-guarded", "hold")  # type: ignore[valid-type]
    computed: choice("ship", "ship-guarded", "hold")  # type: ignore[valid-type]
    rule: Text
    reasons: list[Text] = Field(default_factory=list)
    override: Override | None = None


class Outputs(Strict):
    """What the workbench concluded (written by its commands, not by hand)."""

    classification: Classification | None = None
    mitigation: Mitigation | None = None
    validation_matrix: ValidationMatrix | None = None
    rollback_triggers: list[RollbackTrigger] = Field(default_factory=list)
    release: Release | None = None


class Signature(Strict):
    """One owner's SSHSIG over the packet's approval statement."""

    role: choice(*ALL_ROLES)  # type: ignore[valid-type]
    principal: Principal
    key_fingerprint: Text
    time: Text
    decision: Text
    statement: Text
    signature: Text


class Packet(Strict):
    """A handoff packet, format version 1."""

    format: choice(FORMAT)  # type: ignore[valid-type]
    id: Slug
    title: Text
    topic: choice(*TOPICS)  # type: ignore[valid-type]
    anchor_metric: Text = Field(description="The one primary metric the packet argues about.")
    seed: Seed = Field(description="Every random draw in the model derives from it.")
    owners: list[Owner] = Field(min_length=1)
    inputs: Inputs
    baseline: Config
    candidates: list[Candidate] = Field(default_factory=list)
    outputs: Outputs = Field(default_factory=Outputs)
    signatures: list[Signature] = Field(default_factory=list)
