"""LLM serving with continuous (iteration-level) batching: inputs, the request stream, the run.

Each request is a prompt (prefilled, the first output token with it) and then one decode step
per further output token. Engines (one per core) re-form their batch every iteration (vLLM,
TensorRT-LLM, SGLang): running sequences' decode steps plus prefill tokens of waiting requests,
up to `max_num_batched_tokens` and `max_num_seqs`, within the KV cache. The loop is in
`serving_kernel.py`; semantics in model/runtime/README.md "Continuous batching (LLM serving)".
Times are ms, lengths tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from model.runtime.inputs import RuntimeHardware, ServiceSpec, Workload
from model.runtime.serving_kernel import serving_kernel
from model.runtime.serving_rules import SERVING_PLACEMENTS
from model.runtime.workload import arrival_times_ms, random_streams, service_draws_ms


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass(frozen=True)
class LengthMix:
    """A token-length distribution (`inputs.workload.generation.prompt_len` / `output_len`).

    Attributes:
        field: the packet field it came from (for errors).
        values: lengths, tokens, positive whole numbers, no duplicates.
        weights: relative draw weights, same length, >= 0, not all zero.
    """

    field: str
    values: tuple[int, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        p = self.field
        _require(len(self.values) > 0, f"{p}.values must not be empty")
        _require(
            len(self.weights) == len(self.values),
            f"{p}.weights has {len(self.weights)} entries, values has {len(self.values)}",
        )
        _require(all(int(v) >= 1 for v in self.values), f"{p}.values must be whole numbers >= 1")
        _require(len(set(self.values)) == len(self.values), f"{p}.values has duplicates")
        _require(
            all(math.isfinite(w) and w >= 0 for w in self.weights) and sum(self.weights) > 0,
            f"{p}.weights must be >= 0 and not all zero",
        )

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n,) int64 lengths drawn with the weights (no draw when there is one value)."""
        values = np.asarray(self.values, np.int64)
        if len(values) == 1:
            return np.full(n, values[0], np.int64)
        w = np.asarray(self.weights, np.float64)
        return values[rng.choice(len(values), size=n, p=w / w.sum())]


@dataclass(frozen=True)
class ContinuousPolicy:
    """The continuous scheduler (`batch_policy` with `scheduler: continuous`).

    Attributes:
        max_num_seqs: most sequences running at once per engine, >= 1.
        max_num_batched_tokens: most tokens (decode steps + prefill tokens) per iteration, >= 1.
        chunked_prefill: prompts may be split over iterations; without it a prompt is prefilled
            whole, so max_num_batched_tokens must hold the longest prompt.
        kv_cache_tokens: KV-cache capacity per engine, tokens; None: unlimited.
    """

    max_num_seqs: int = 64
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = False
    kv_cache_tokens: int | None = None

    def __post_init__(self) -> None:
        p = "batch_policy"
        for name in ("max_num_seqs", "max_num_batched_tokens"):
            v = getattr(self, name)
            _require(int(v) >= 1, f"{p}.{name} must be >= 1 (got {v!r})")
        if self.kv_cache_tokens is not None:
            _require(
                int(self.kv_cache_tokens) >= 1,
                f"{p}.kv_cache_tokens must be >= 1 (got {self.kv_cache_tokens!r})",
            )


@dataclass(frozen=True)
class ServingSLA:
    """Serving targets (`inputs.sla`), ms; None means no target.

    Attributes:
        p95_ms, p99_ms: end-to-end request latency percentiles.
        ttft_p95_ms: time-to-first-token p95. tpot_p95_ms: time-per-output-token p95.
    """

    p95_ms: float | None = None
    p99_ms: float | None = None
    ttft_p95_ms: float | None = None
    tpot_p95_ms: float | None = None


@dataclass(frozen=True)
class ServingConfig:
    """One serving simulation.

    Attributes:
        workload: arrivals, request count and warm-up (its seq_len mix is not used).
        prompt_len, output_len: the length mixes (output_len counts the prefill's token).
        policy: the continuous scheduler.
        hardware: cores = engines (each with its own scheduler and KV cache).
        placement: how requests reach engines (SERVING_PLACEMENTS).
        service: `model` (iteration times from an `IterationTable`) or `distribution` (each
            iteration takes one draw, whatever its batch: the pinned mode).
        sla: targets.
        seed: seed of every draw.
    """

    workload: Workload
    prompt_len: LengthMix
    output_len: LengthMix
    policy: ContinuousPolicy
    hardware: RuntimeHardware
    placement: str = "central-queue"
    service: ServiceSpec = ServiceSpec()  # noqa: RUF009 - frozen, so a shared default is safe
    sla: ServingSLA = ServingSLA()
    seed: int = 0

    def __post_init__(self) -> None:
        _require(
            self.placement in SERVING_PLACEMENTS,
            f"placement must be one of {', '.join(SERVING_PLACEMENTS)} with batch_policy.scheduler"
            f" continuous (got {self.placement!r})",
        )
        longest_prompt = max(self.prompt_len.values)
        if not self.policy.chunked_prefill:
            _require(
                self.policy.max_num_batched_tokens >= longest_prompt,
                f"batch_policy.max_num_batched_tokens ({self.policy.max_num_batched_tokens}) "
                f"must hold the longest prompt ({longest_prompt}) without chunked_prefill",
            )
        kv = self.policy.kv_cache_tokens
        need = longest_prompt + max(self.output_len.values)
        _require(
            kv is None or kv >= need,
            f"batch_policy.kv_cache_tokens ({kv}) must hold the longest sequence, prompt + "
            f"output ({need} tokens)",
        )

    @property
    def longest_sequence(self) -> int:
        """Longest prompt + longest output, tokens."""
        return max(self.prompt_len.values) + max(self.output_len.values)


@dataclass(frozen=True)
class IterationTable:
    """Iteration time of one engine by bucket (built by `serving_table.build_iteration_table`).

    An iteration with d decode sequences of mean KV length kv and p prefill tokens takes
    lin_ms[m(d + p)] + dec_attn_ms[d - 1, kv bucket] (d > 0) + pre_attn_ms[p bucket] (p > 0),
    each bucket the smallest edge >= the value (padding up, as captured graphs do).

    Attributes:
        m_edges: (M,) int64 token-count buckets of the token-parallel kernels (GEMMs, norms).
        lin_ms: (M,) float64 ms of those kernels at each bucket (one pass, weights read once).
        kv_edges: (K,) int64 KV-length buckets, tokens.
        dec_attn_ms: (max_num_seqs, K) float64 ms of decode attention for d sequences.
        p_edges: (P,) int64 prefill-token buckets.
        pre_attn_ms: (P,) float64 ms of prefill attention over a chunk of p tokens.
        pre_fallback: (P,) bool: that chunk is above every compiled bucket (generic path).
    """

    m_edges: np.ndarray
    lin_ms: np.ndarray
    kv_edges: np.ndarray
    dec_attn_ms: np.ndarray
    p_edges: np.ndarray
    pre_attn_ms: np.ndarray
    pre_fallback: np.ndarray | None = None


@dataclass(frozen=True)
class ServingStream:
    """The requests of one serving run, sorted by arrival.

    Attributes:
        arrival_ms: (N,) float64 arrival times, ms.
        prompt_len: (N,) int64 prompt tokens. output_len: (N,) int64 output tokens (>= 1).
        route: (N,) int64 engine of each request for round-robin / random placement.
        iteration_draws_ms: (D,) float64 pinned iteration times (empty for the model), ms;
            iteration i takes draw i mod D.
    """

    arrival_ms: np.ndarray
    prompt_len: np.ndarray
    output_len: np.ndarray
    route: np.ndarray
    iteration_draws_ms: np.ndarray


def generate_serving_requests(config: ServingConfig) -> ServingStream:
    """Draw the run's requests from the seed. Arrivals use the same stream as the dynamic
    batcher (same packet and seed: same arrival times); lengths have their own streams."""
    n = int(config.workload.requests)
    rng = random_streams(config.seed)
    lengths = np.random.SeedSequence([int(config.seed), 14]).spawn(2)  # 14: this tag
    prompt = config.prompt_len.draw(n, np.random.Generator(np.random.PCG64(lengths[0])))
    output = config.output_len.draw(n, np.random.Generator(np.random.PCG64(lengths[1])))
    cores = int(config.hardware.cores)
    if config.placement == "random":
        route = rng["placement"].integers(0, cores, size=n, dtype=np.int64)
    else:
        route = np.arange(n, dtype=np.int64) % cores
    if config.service.source == "distribution":
        # enough distinct draws for every iteration without preemption (cycled beyond)
        count = int(output.sum() + np.ceil(prompt / config.policy.max_num_batched_tokens).sum())
        draws = service_draws_ms(config.service, count, rng["service"])
    else:
        draws = np.zeros(0)
    return ServingStream(
        arrival_ms=arrival_times_ms(config.workload.arrivals, n, rng["arrivals"]),
        prompt_len=prompt,
        output_len=output,
        route=route,
        iteration_draws_ms=draws,
    )


@dataclass(frozen=True)
class ServingTrace:
    """Per-request results.

    Attributes:
        arrival_ms, first_token_ms, finish_ms: (N,) float64 ms.
        prompt_len, output_len: (N,) int64 tokens.
        preemptions: (N,) int64 times each request was preempted (recomputed).
        engine: (N,) int64 engine that finished it.
        scheduled_ms: (N,) float64 start of the first iteration that scheduled it, ms.
        interference_ms: (N,) float64 time its decode steps spent on other requests' prefill
            tokens (iteration time minus the same iteration without them), ms.
        preempted_ms: (N,) float64 time from each eviction until recomputed back to where it
            was (the recompute's own iteration included), ms; preempted_before_first_ms: the
            part before its first token.
    """

    arrival_ms: np.ndarray
    first_token_ms: np.ndarray
    finish_ms: np.ndarray
    prompt_len: np.ndarray
    output_len: np.ndarray
    preemptions: np.ndarray
    engine: np.ndarray
    scheduled_ms: np.ndarray
    interference_ms: np.ndarray
    preempted_ms: np.ndarray
    preempted_before_first_ms: np.ndarray

    @property
    def ttft_ms(self) -> np.ndarray:
        """(N,) time to first token, ms."""
        return self.first_token_ms - self.arrival_ms

    @property
    def tpot_ms(self) -> np.ndarray:
        """(N,) time per output token after the first, ms; NaN for one-token requests."""
        steps = (self.output_len - 1).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(steps > 0, (self.finish_ms - self.first_token_ms) / steps, np.nan)

    @property
    def latency_ms(self) -> np.ndarray:
        """(N,) end-to-end latency, ms."""
        return self.finish_ms - self.arrival_ms


@dataclass(frozen=True)
class IterationTrace:
    """Per-iteration results, in simulation order.

    Attributes:
        start_ms, end_ms: (I,) float64 ms. engine: (I,) int64.
        decode_seqs: (I,) int64 decode steps in the iteration. prefill_tokens: (I,) int64.
        kv_tokens: (I,) int64 KV-cache tokens the engine holds after the iteration.
    """

    start_ms: np.ndarray
    end_ms: np.ndarray
    engine: np.ndarray
    decode_seqs: np.ndarray
    prefill_tokens: np.ndarray
    kv_tokens: np.ndarray


@dataclass(frozen=True)
class ServingResult:
    """A serving run: config, stream, per-request and per-iteration traces, measured mask, and
    `kv_limited`: how many times the KV-cache limit refused an admission or forced a preemption
    (0: the run is the same with an unbounded cache)."""

    config: ServingConfig
    stream: ServingStream
    requests: ServingTrace
    iterations: IterationTrace
    measured: np.ndarray
    kv_limited: int = 0


def _table_arrays(table: IterationTable | None, config: ServingConfig):
    if table is None:
        one = np.ones(1, np.int64)
        return one, np.zeros(1), one, np.zeros((1, 1)), one, np.zeros(1)
    need_m = config.policy.max_num_seqs + max(
        config.policy.max_num_batched_tokens, config.longest_sequence
    )
    _require(
        table.m_edges[-1] >= need_m
        and table.kv_edges[-1] >= config.longest_sequence
        and table.p_edges[-1] >= max(config.policy.max_num_batched_tokens, config.longest_sequence)
        and table.dec_attn_ms.shape[0] >= config.policy.max_num_seqs,
        "the iteration table does not cover the packet's token counts",
    )
    return (
        np.ascontiguousarray(table.m_edges, np.int64),
        np.ascontiguousarray(table.lin_ms, np.float64),
        np.ascontiguousarray(table.kv_edges, np.int64),
        np.ascontiguousarray(table.dec_attn_ms, np.float64),
        np.ascontiguousarray(table.p_edges, np.int64),
        np.ascontiguousarray(table.pre_attn_ms, np.float64),
    )


def simulate_serving(
    config: ServingConfig,
    table: IterationTable | None = None,
    stream: ServingStream | None = None,
    *,
    request_level: bool = False,
    decode_alone: bool = False,
    incremental: bool = True,
) -> ServingResult:
    """Run the continuous scheduler. table: required for `service.source: model`.
    request_level: admit requests only into an empty engine (request-level batching, the
    baseline continuous batching is judged against; same iteration costs). decode_alone: price
    every iteration with decode steps without its prefill tokens (the prefill-interference
    counterfactual of model/runtime/serving_attribution.py). incremental: False visits every
    running sequence every iteration instead of keeping the decoders' counts by step (the
    plain scan the incremental bookkeeping is checked against: identical results, slower)."""
    pinned = config.service.source == "distribution"
    _require(pinned or table is not None, "service.source model needs an iteration table")
    stream = stream or generate_serving_requests(config)
    kv = config.policy.kv_cache_tokens
    out = serving_kernel(
        stream.arrival_ms,
        stream.prompt_len,
        stream.output_len,
        stream.route,
        SERVING_PLACEMENTS[config.placement],
        int(config.hardware.cores),
        int(config.policy.max_num_seqs),
        int(config.policy.max_num_batched_tokens),
        bool(config.policy.chunked_prefill),
        bool(request_level),
        np.int64(kv if kv is not None else np.iinfo(np.int64).max // 4),
        pinned,
        bool(decode_alone),
        bool(incremental),
        stream.iteration_draws_ms if pinned else np.zeros(1),
        *_table_arrays(None if pinned else table, config),
    )
    first, finish, preempted, engine, scheduled, interference, lost, lost_first, *its, kv = out
    if not np.all(np.isfinite(finish)):  # the checks make this unreachable; never half-report
        raise RuntimeError("the serving scheduler stopped with requests unfinished")
    n = len(stream.arrival_ms)
    measured = np.arange(n) >= int(config.workload.warmup_fraction * n)
    return ServingResult(
        config=config,
        stream=stream,
        requests=ServingTrace(
            stream.arrival_ms,
            first,
            finish,
            stream.prompt_len,
            stream.output_len,
            preempted,
            engine,
            scheduled,
            interference,
            lost,
            lost_first,
        ),
        iterations=IterationTrace(*its),
        measured=measured,
        kv_limited=int(kv),
    )
