"""The continuous (iteration-level) scheduler against queueing theory and its own invariants."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import preset
from model.runtime.inputs import Arrivals, RuntimeHardware, ServiceSpec, ShapeMix, Workload
from model.runtime.queueing_theory import md1_mean_wait
from model.runtime.serving import (
    ContinuousPolicy,
    LengthMix,
    ServingConfig,
    generate_serving_requests,
    simulate_serving,
)
from model.runtime.serving_summary import latency_parts
from model.runtime.serving_table import build_iteration_table

LLAMA_8B = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)


def config(
    *,
    rate: float,
    prompt=((100,), (1.0,)),
    output=((10,), (1.0,)),
    policy: ContinuousPolicy,
    service: ServiceSpec | None = None,
    cores: int = 1,
    placement: str = "central-queue",
    requests: int = 20_000,
    seed: int = 0,
) -> ServingConfig:
    return ServingConfig(
        workload=Workload(Arrivals("poisson", rate), ShapeMix((1,), (1.0,)), requests, 0.1),
        prompt_len=LengthMix("inputs.workload.generation.prompt_len", *prompt),
        output_len=LengthMix("inputs.workload.generation.output_len", *output),
        policy=policy,
        hardware=RuntimeHardware(cores, 3350.0),
        placement=placement,
        service=service or ServiceSpec("model"),
        seed=seed,
    )


def pinned(t: float) -> ServiceSpec:
    return ServiceSpec("distribution", "deterministic", t)


@pytest.fixture(scope="module")
def h100_table():
    return build_iteration_table(
        LLAMA_8B,
        preset("h100-sxm"),
        "standard",
        {},
        max_num_seqs=64,
        max_tokens=8192,
        longest_sequence=4096 + 512,
    )


def test_one_sequence_at_a_time_is_md1_with_d_equal_l_times_t() -> None:
    """max_num_seqs 1, one prompt and output length L, pinned iteration t: each request holds
    the engine for L iterations (the prefill gives the first token), so the engine is M/D/1
    with D = L t and the mean wait before the first iteration is Pollaczek-Khinchine's."""
    length, t, rho = 10, 1.0, 0.7
    service = length * t
    waits = []
    for seed in range(4):
        run = simulate_serving(
            config(
                rate=rho / service * 1000.0,
                output=((length,), (1.0,)),
                policy=ContinuousPolicy(1, 8192, False, None),
                service=pinned(t),
                seed=seed,
            )
        )
        m = run.measured
        waits.append(np.mean(run.requests.ttft_ms[m] - t))  # TTFT = wait + the prefill's t
        assert np.allclose(run.requests.latency_ms - run.requests.ttft_ms, (length - 1) * t)
    assert np.mean(waits) == pytest.approx(md1_mean_wait(rho, service), rel=0.05)


def test_pinned_iterations_without_kv_limit_give_tpot_t_and_ttft_within_one_iteration() -> None:
    """Pinned t, room for every sequence: a running sequence decodes in every iteration and
    the engine never idles while it runs, so TPOT is t; an arrival waits at most for the
    iteration in flight, then its prefill takes t: TTFT in [t, 2t]."""
    t = 0.5
    run = simulate_serving(
        config(
            rate=40.0,
            prompt=((100, 300), (1.0, 1.0)),
            output=((10, 200), (1.0, 1.0)),
            policy=ContinuousPolicy(512, 1_000_000, False, None),
            service=pinned(t),
            cores=2,
        )
    )
    assert run.iterations.decode_seqs.max() > 1  # sequences do share iterations
    tpot, ttft = run.requests.tpot_ms, run.requests.ttft_ms
    assert np.allclose(tpot, t, rtol=1e-9, atol=0)
    assert ttft.min() >= t - 1e-9 and ttft.max() <= 2 * t + 1e-9
    assert ttft.max() > 1.5 * t  # arrivals do land mid-iteration


def test_small_kv_cache_preempts_newest_and_still_completes_every_request(h100_table) -> None:
    """A KV cache for a few sequences: the newest running one is preempted (recomputed later),
    the cache is never over-full, and every request still produces all its tokens."""
    kv = 4096 + 512 + 2048
    run = simulate_serving(
        config(
            rate=6.0,
            prompt=((256, 4096), (0.7, 0.3)),
            output=((128, 512), (0.5, 0.5)),
            policy=ContinuousPolicy(64, 2048, True, kv),
            requests=1500,
        ),
        h100_table,
    )
    assert run.requests.preemptions.sum() > 0
    assert np.all(np.isfinite(run.requests.finish_ms))
    assert run.iterations.kv_tokens.max() <= kv
    assert np.all(run.requests.finish_ms >= run.requests.first_token_ms)
    parts = latency_parts(run)  # additive, and no part negative (one window per eviction run)
    assert np.allclose(sum(parts.values()), run.requests.latency_ms, rtol=1e-12, atol=1e-9)
    assert all(np.all(v >= -1e-9) for v in parts.values())
    assert np.all(parts["preemption"][run.requests.preemptions > 0] > 0)
    unlimited = simulate_serving(
        config(
            rate=6.0,
            prompt=((256, 4096), (0.7, 0.3)),
            output=((128, 512), (0.5, 0.5)),
            policy=ContinuousPolicy(64, 2048, True, None),
            requests=1500,
        ),
        h100_table,
    )
    assert unlimited.requests.preemptions.sum() == 0
    assert np.mean(run.requests.latency_ms) > np.mean(unlimited.requests.latency_ms)


def test_chunked_prefill_lowers_tpot_p99_on_long_prompts(h100_table) -> None:
    """Whole 4k prompts stall every running decode for a long prefill iteration; 512-token
    chunks spread it and let decodes ride along (weights read once per pass)."""
    runs = {}
    for chunked, budget in ((False, 8192), (True, 512)):
        run = simulate_serving(
            config(
                rate=4.0,
                prompt=((256, 4096), (0.7, 0.3)),
                output=((128, 512), (0.5, 0.5)),
                policy=ContinuousPolicy(64, budget, chunked, None),
                requests=2000,
                seed=3,
            ),
            h100_table,
        )
        m = run.measured
        runs[chunked] = (
            np.percentile(run.requests.tpot_ms[m], 99),
            np.percentile(run.requests.ttft_ms[m], 95),
        )
    assert runs[True][0] < runs[False][0]  # TPOT p99 lower with chunks
    assert runs[True][1] > runs[False][1]  # ... paid for in TTFT


@pytest.mark.parametrize("placement", ["central-queue", "round-robin", "random", "least-loaded"])
def test_every_placement_completes_every_request_on_several_engines(placement: str) -> None:
    run = simulate_serving(
        config(
            rate=300.0,
            prompt=((64, 512), (0.5, 0.5)),
            output=((4, 64), (0.5, 0.5)),
            policy=ContinuousPolicy(8, 1024, True, 2048),
            service=ServiceSpec("distribution", "exponential", 2.0),
            cores=4,
            placement=placement,
            requests=3000,
        )
    )
    assert np.all(np.isfinite(run.requests.finish_ms))
    assert set(np.unique(run.iterations.engine)) == {0, 1, 2, 3}
    assert np.all(run.requests.first_token_ms - run.requests.arrival_ms > 0)


def test_without_chunked_prefill_the_token_budget_must_hold_the_longest_prompt() -> None:
    with pytest.raises(ValueError, match=r"^batch_policy.max_num_batched_tokens \(512\) must"):
        config(rate=1.0, prompt=((1024,), (1.0,)), policy=ContinuousPolicy(8, 512, False, None))
    with pytest.raises(ValueError, match=r"^batch_policy.kv_cache_tokens \(100\) must hold"):
        config(rate=1.0, policy=ContinuousPolicy(8, 512, True, 100))


SCRIPT = """
import hashlib, json, numpy as np
from tests.runtime.test_serving import config, ContinuousPolicy, simulate_serving, ServiceSpec
run = simulate_serving(config(rate=50.0, prompt=((64, 900), (0.5, 0.5)), output=((8, 90),
    (0.5, 0.5)), policy=ContinuousPolicy(16, 512, True, 4000), cores=2,
    service=ServiceSpec("distribution", "lognormal", 3.0, 1.5), requests=3000, seed=7))
h = hashlib.sha256()
for a in (run.requests.first_token_ms, run.requests.finish_ms, run.iterations.kv_tokens):
    h.update(np.ascontiguousarray(a).tobytes())
from packets.examples import example_path
from packets.load import load_packet
from triage.runs import run_packet
report = run_packet(load_packet(example_path("llm-serving-continuous")), requests=3000)
h.update(json.dumps(report.summary).encode())
print(h.hexdigest())
"""


def test_same_seed_gives_identical_bytes_whatever_the_thread_count() -> None:
    """A pinned multi-engine run with preemption and the example's model-backed run (its
    iteration table included) hash the same with 1 and 2 BLAS/OpenMP/numba threads."""
    digests = set()
    for threads in ("1", "2"):
        env = {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}
        env["NUMBA_NUM_THREADS"] = threads
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    assert len(digests) == 1
    assert hashlib.sha256(b"").hexdigest() not in digests


def test_every_preset_gives_a_cited_hbm_capacity_and_the_kv_default_follows_it() -> None:
    from model.compiler.hardware import PRESET_SOURCES
    from model.runtime.serving_rules import default_kv_cache_tokens, kv_bytes_per_token

    for name, sources in PRESET_SOURCES.items():
        assert preset(name).hbm_gib > 0, name
        assert "hbm_gib" in sources, name
    assert kv_bytes_per_token(LLAMA_8B) == 2 * 8 * 128 * 2 * 32  # 128 KiB per token
    h100, h200 = (
        default_kv_cache_tokens(LLAMA_8B, preset(n).hbm_gib) for n in ("h100-sxm", "h200-sxm")
    )
    assert 400_000 < h100 < h200  # ~64 GB of KV on an 80 GB part, more on 141 GB
    with pytest.raises(ValueError, match=r"^batch_policy\.kv_cache_tokens is required"):
        default_kv_cache_tokens(LLAMA_8B, 0.0)


@settings(max_examples=40, deadline=None)
@given(
    seqs=st.integers(1, 8),
    budget=st.integers(16, 600),
    chunked=st.booleans(),
    spare=st.integers(0, 400),
    cores=st.integers(1, 3),
    placement=st.sampled_from(["central-queue", "round-robin", "random", "least-loaded"]),
    seed=st.integers(0, 2**31),
)
def test_invariants_hold_for_any_small_engine(
    seqs: int, budget: int, chunked: bool, spare: int, cores: int, placement: str, seed: int
) -> None:
    """Whatever the limits: every request finishes with all its tokens, after its first token,
    no engine's KV cache overfills, no iteration exceeds the token budget unless it is one
    whole prompt alone, and sequences per iteration never exceed max_num_seqs."""
    prompt = ((16, 200), (0.5, 0.5))
    output = ((1, 30), (0.5, 0.5))
    if not chunked:
        budget = max(budget, 200)
    kv = 230 + spare
    run = simulate_serving(
        config(
            rate=200.0,
            prompt=prompt,
            output=output,
            policy=ContinuousPolicy(seqs, budget, chunked, kv),
            service=ServiceSpec("distribution", "exponential", 1.0),
            cores=cores,
            placement=placement,
            requests=300,
            seed=seed,
        )
    )
    r, it = run.requests, run.iterations
    assert np.all(np.isfinite(r.finish_ms)) and np.all(r.finish_ms >= r.first_token_ms)
    assert np.all(r.first_token_ms > r.arrival_ms)
    assert it.kv_tokens.max() <= kv
    assert np.all(it.decode_seqs <= seqs)
    over = it.decode_seqs + it.prefill_tokens > budget
    assert np.all(it.decode_seqs[over] == 0)  # only a lone recomputed prompt may exceed it
    assert np.all(np.diff(it.start_ms[it.engine == 0]) >= 0)


def test_prefill_chunks_pad_to_compiled_buckets_and_fall_back_above_them() -> None:
    """A chunk runs in the smallest compiled bucket >= it (padded: never cheaper than its own
    length) and above the largest takes the generic path, at extra dispatch per kernel."""
    hw = preset("h100-sxm")
    kwargs = {"max_num_seqs": 4, "max_tokens": 4096, "longest_sequence": 4096}
    free = build_iteration_table(LLAMA_8B, hw, "standard", {}, **kwargs)
    tight = build_iteration_table(
        LLAMA_8B, hw, "standard", {}, compiled_shapes=[1024], dispatch_us=50.0, **kwargs
    )

    def price(table, p: int) -> tuple[float, bool]:  # as the kernel looks a chunk up
        at = int(np.searchsorted(table.p_edges, p))
        return float(table.pre_attn_ms[at]), bool(table.pre_fallback[at])

    assert not price(tight, 700)[1] and price(tight, 4096)[1]
    assert price(tight, 300)[0] == price(tight, 700)[0]  # both padded to 1024
    assert price(tight, 700)[0] > price(free, 700)[0]
    assert price(tight, 4096)[0] > price(free, 4096)[0]  # generic path
    assert not free.pre_fallback.any()


def test_a_chunk_is_padded_once_to_its_compiled_bucket() -> None:
    """A chunk just under a compiled bucket runs padded to that bucket, not first to a ladder
    edge above it and then to the next bucket: 1,020 tokens cost what 1,024 cost, and 1,025
    (the next bucket, 2,048) more; the ladder alone would put 1,020 and 1,025 on one edge."""
    hw = preset("h100-sxm")
    table = build_iteration_table(
        LLAMA_8B, hw, "standard", {}, compiled_shapes=[256, 512, 1024, 2048, 4096],
        max_num_seqs=4, max_tokens=4096, longest_sequence=4096,
    )  # fmt: skip
    exact = build_iteration_table(
        LLAMA_8B, hw, "standard", {}, compiled_shapes=[1024], max_num_seqs=4, max_tokens=1024,
        longest_sequence=1024,
    )  # fmt: skip

    def price(t, p: int) -> float:
        return float(t.pre_attn_ms[int(np.searchsorted(t.p_edges, p))])

    assert set(table.p_edges.tolist()) >= {256, 512, 1024, 2048, 4096}
    assert price(table, 1020) == price(table, 1024) == price(exact, 1024)
    assert price(table, 1025) == price(table, 2048) > price(table, 1024)


def _outputs(run) -> list[np.ndarray]:
    r, it = run.requests, run.iterations
    return [
        r.first_token_ms, r.finish_ms, r.preemptions, r.engine, r.scheduled_ms,
        r.interference_ms, r.preempted_ms, r.preempted_before_first_ms, it.start_ms, it.end_ms,
        it.engine, it.decode_seqs, it.prefill_tokens, it.kv_tokens, np.array([run.kv_limited]),
    ]  # fmt: skip


def _same_bytes(a, b) -> bool:
    return all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(_outputs(a), _outputs(b), strict=True)
    )


@settings(max_examples=60, deadline=None)
@given(
    seqs=st.integers(1, 64),
    budget=st.integers(8, 900),
    chunked=st.booleans(),
    kv=st.one_of(st.none(), st.integers(400, 4000)),
    cores=st.integers(1, 3),
    placement=st.sampled_from(["central-queue", "round-robin", "random", "least-loaded"]),
    service=st.sampled_from(["model", "exponential", "deterministic"]),
    mode=st.sampled_from(["continuous", "request-level", "decode-alone"]),
    rate=st.floats(20.0, 900.0),
    seed=st.integers(0, 2**31),
)
def test_incremental_bookkeeping_gives_the_plain_scans_bytes(
    h100_table, seqs, budget, chunked, kv, cores, placement, service, mode, rate, seed
) -> None:
    """The decoders' counts kept by step (serving_kernel.py) against visiting every running
    sequence every iteration: every output array byte for byte, across token-budget cuts into
    the decoders (budget < max_num_seqs), KV preemption and recompute, one-token outputs and
    prompts, every placement, pinned and table-priced iterations, and both counterfactuals."""
    if not chunked:
        budget = max(budget, 300)
    spec = ServiceSpec("model") if service == "model" else ServiceSpec("distribution", service, 1.0)
    run_config = config(
        rate=rate,
        prompt=((1, 16, 200, 300), (0.1, 0.4, 0.4, 0.1)),
        output=((1, 2, 30, 100), (0.2, 0.2, 0.4, 0.2)),
        policy=ContinuousPolicy(seqs, budget, chunked, kv),
        service=spec,
        cores=cores,
        placement=placement,
        requests=300,
        seed=seed,
    )
    table = h100_table if service == "model" else None
    flags = {"request_level": mode == "request-level", "decode_alone": mode == "decode-alone"}
    fast = simulate_serving(run_config, table, **flags)
    plain = simulate_serving(run_config, table, **flags, incremental=False)
    assert _same_bytes(fast, plain)


@pytest.mark.parametrize("candidate", [None, "chunked-prefill-512", "small-kv-cache"])
def test_the_examples_runs_are_the_plain_scans_bytes(candidate) -> None:
    """The shipped serving example at its 20,000 requests (whole 4k prompts, 512-token chunks,
    and a small KV cache that preempts ~1,000 times): identical bytes both ways."""
    from packets.examples import example_path
    from packets.load import load_packet
    from triage.scenario import build_scenario

    scenario = build_scenario(load_packet(example_path("llm-serving-continuous")), candidate)
    stream = generate_serving_requests(scenario.serving)
    fast = simulate_serving(scenario.serving, scenario.iteration_table, stream)
    plain = simulate_serving(scenario.serving, scenario.iteration_table, stream, incremental=False)
    assert len(fast.iterations.start_ms) > 90_000
    assert (fast.requests.preemptions.sum() > 0) == (candidate == "small-kv-cache")
    assert _same_bytes(fast, plain)


@given(
    gaps=st.lists(st.integers(1, 300), min_size=1, max_size=40),
    probes=st.lists(st.integers(0, 6000), max_size=50),
)
def test_bucket_index_is_searchsorted(gaps, probes) -> None:
    """The kernel's direct bucket index gives np.searchsorted's answer for every count up to
    the last edge; above DIRECT_BUCKETS there is none (the kernel searches instead)."""
    from model.runtime.serving_kernel import DIRECT_BUCKETS, _bucket_index

    edges = np.cumsum(np.asarray(gaps, np.int64))
    index = _bucket_index(edges)
    assert len(index) == edges[-1] + 1
    for x in [0, 1, int(edges[-1]), *[p for p in probes if p <= edges[-1]]]:
        assert index[x] == np.searchsorted(edges, x)
    assert len(_bucket_index(np.array([1, 2, DIRECT_BUCKETS + 1], np.int64))) == 0
