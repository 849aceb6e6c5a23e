"""Cross-field checks of LLM-serving packets (block phase `serving`, `scheduler: continuous`).

`serving_problems` runs with the other cross-field checks (packets/checks.py);
`serving_model_problems` with the model checks (packets/model_checks.py), since the default KV
cache needs the hardware's HBM capacity. Messages are one line, located at the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from model.compiler.hardware import HardwareEnvelope
from model.runtime.serving_rules import SERVING_PLACEMENTS, default_kv_cache_tokens

from .candidates import apply_candidate
from .schema import Config, Packet

Path_ = tuple[str | int, ...]
Found = Iterator[tuple[Path_, str, str]]

CONTINUOUS_ONLY = ("max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "kv_cache_tokens")
WEIGHT_TOLERANCE = 1e-6  # mix weights must sum to 1 within this (decimal rounding headroom)
GENERATION = ("inputs", "workload", "generation")
MAX_SERVING_REQUESTS = 1_000_000
"""Requests per serving run: the loop keeps 48 bytes per iteration (the KV timeline); at 14
iterations per request (longer outputs than the example's 5-6) 10^6 requests hold ~1.3 GB at
the arrays' doubling growth, under the 2.1 GB a dynamic run may take at its own cap (README
"Memory")."""


def _configs(packet: Packet) -> Iterator[tuple[Config, Path_, set[str] | None]]:
    """(configuration, its path, what a candidate sets: sections, and batch_policy.<field>
    for the batch-policy fields it patches; None for the baseline)."""
    yield packet.baseline, ("baseline",), None
    for i, candidate in enumerate(packet.candidates):
        own = {name for name in type(candidate).model_fields if getattr(candidate, name)}
        if candidate.batch_policy is not None:
            patched = candidate.batch_policy.model_dump(exclude_none=True)
            own |= {f"batch_policy.{name}" for name in patched}
        yield apply_candidate(packet.baseline, candidate), ("candidates", i), own


def _own(path: Path_, own: set[str] | None) -> bool:
    """A problem is the candidate's when it sets the field (inherited ones are the baseline's)."""
    if own is None:
        return True
    if path[2] == "batch_policy" and len(path) > 3:
        return f"batch_policy.{path[3]}" in own
    return path[2] in own


def mix_problems(mix, path: Path_) -> Found:
    """A values/weights mix (shapes, prompt and output lengths): one weight per value, weights
    summing to 1, distinct values."""
    if len(mix.values) != len(mix.weights):
        yield (
            (*path, "weights"),
            f"has {len(mix.weights)} weights for {len(mix.values)} values",
            "error",
        )
    total = math.fsum(mix.weights)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        yield (*path, "weights"), f"must sum to 1, they sum to {total:.6g}", "error"
    if len(set(mix.values)) != len(mix.values):
        yield (*path, "values"), "values must be distinct", "error"


def _config(packet: Packet, config: Config, path: Path_) -> Found:
    policy = config.batch_policy
    bp = (*path, "batch_policy")
    serving = packet.inputs.workload.block.phase == "serving"
    if policy.scheduler == "dynamic":
        for name in CONTINUOUS_ONLY:
            if getattr(policy, name) is not None:
                yield (*bp, name), "applies only to scheduler continuous: remove it", "error"
        if serving:
            yield (*bp, "scheduler"), "block phase serving needs scheduler continuous", "error"
        return
    if not serving:
        yield (*bp, "scheduler"), "continuous needs inputs.workload.block.phase serving", "error"
    for name in ("max_num_seqs", "max_num_batched_tokens"):
        if getattr(policy, name) is None:
            yield (*bp, name), "required for scheduler continuous", "error"
    if config.placement not in SERVING_PLACEMENTS:
        yield (
            (*path, "placement"),
            f"{config.placement} does not apply to scheduler continuous "
            f"(use {', '.join(SERVING_PLACEMENTS)})",
            "error",
        )
    generation = packet.inputs.workload.generation
    if generation is None or policy.max_num_batched_tokens is None:
        return
    longest_prompt = max(generation.prompt_len.values)
    if not policy.chunked_prefill and policy.max_num_batched_tokens < longest_prompt:
        yield (
            (*bp, "max_num_batched_tokens"),
            f"{policy.max_num_batched_tokens} cannot hold the longest prompt ({longest_prompt}"
            " tokens) without chunked_prefill",
            "error",
        )
    elif not policy.chunked_prefill and policy.max_num_seqs is not None:
        room = policy.max_num_batched_tokens - policy.max_num_seqs
        if room < longest_prompt:
            yield (
                (*bp, "max_num_batched_tokens"),
                f"beside {policy.max_num_seqs} decode steps only {room} tokens are left: a "
                f"{longest_prompt}-token prompt waits until the engine drains",
                "warning",
            )
    longest = longest_prompt + max(generation.output_len.values)
    if policy.kv_cache_tokens is not None and policy.kv_cache_tokens < longest:
        yield (
            (*bp, "kv_cache_tokens"),
            f"{policy.kv_cache_tokens} cannot hold the longest sequence (prompt + output "
            f"{longest} tokens)",
            "error",
        )


def config_serving_problems(packet: Packet, config: Config, path: Path_ = ()) -> Found:
    """A configuration's problems with the serving contract (what a sweep's edited point must
    pass, as the packet's own configurations do in `serving_problems`)."""
    yield from _config(packet, config, path)


def serving_problems(packet: Packet) -> Found:
    """Problems of the serving contract (generation, scheduler, its limits)."""
    workload = packet.inputs.workload
    serving = workload.block.phase == "serving"
    if serving and workload.generation is None:
        yield GENERATION, "required for block phase serving", "error"
    if serving and workload.block.kind != "llama-decoder":
        yield (
            ("inputs", "workload", "block", "kind"),
            f"phase serving needs kind llama-decoder (got {workload.block.kind})",
            "error",
        )
    if serving and workload.requests > MAX_SERVING_REQUESTS:
        yield (
            ("inputs", "workload", "requests"),
            f"a serving run is capped at {MAX_SERVING_REQUESTS:,} requests (memory grows with "
            "its iterations); use several runs with other seeds",
            "error",
        )
    if not serving and workload.generation is not None:
        yield GENERATION, "applies only to block phase serving: remove it", "error"
    if workload.generation is not None:
        yield from mix_problems(workload.generation.prompt_len, (*GENERATION, "prompt_len"))
        yield from mix_problems(workload.generation.output_len, (*GENERATION, "output_len"))
    for config, path, own in _configs(packet):
        for found in _config(packet, config, path):
            if _own(found[0], own):  # inherited problems are reported once, at the baseline
                yield found


def serving_model_problems(
    packet: Packet, config: Config, hw: HardwareEnvelope, block, where: Path_
) -> list[tuple[Path_, str]]:
    """The default KV cache (HBM after weights) must exist and hold the longest sequence."""
    policy = config.batch_policy
    generation = packet.inputs.workload.generation
    if policy.scheduler != "continuous" or policy.kv_cache_tokens is not None or not generation:
        return []
    base = packet.baseline.batch_policy
    if where != ("baseline",) and base.scheduler == "continuous" and base.kv_cache_tokens is None:
        return []  # the same default as the baseline's: reported there once
    path = (*where, "batch_policy")  # kv_cache_tokens is absent: locate at its section
    try:
        kv = default_kv_cache_tokens(block, hw.hbm_gib)
    except ValueError as exc:
        return [(path, str(exc).removeprefix("batch_policy."))]
    longest = max(generation.prompt_len.values) + max(generation.output_len.values)
    if kv < longest:
        return [
            (
                path,
                f"kv_cache_tokens: the KV cache HBM leaves ({kv} tokens) cannot hold the longest "
                f"sequence "
                f"({longest} tokens)",
            )
        ]
    return []
