"""Serving tail attribution: Shapley values over the serving drivers, their counterfactual
re-runs, and the serving bottleneck class (model/runtime/serving_attribution.py)."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.compiler.hardware import preset
from model.runtime.inputs import ServiceSpec
from model.runtime.serving import ContinuousPolicy, simulate_serving
from model.runtime.serving_attribution import (
    CLASSES,
    DRIVERS,
    METRICS,
    active_drivers,
    all_compiled_shapes,
    compiled_everywhere,
    counterfactual_runs,
    serving_counterfactual,
    switched_off,
    tails,
    with_attribution,
)
from model.runtime.serving_summary import latency_parts, serving_summary
from model.runtime.serving_table import build_iteration_table

from .test_serving import LLAMA_8B, config, pinned

SMALL = {"max_num_seqs": 8, "max_tokens": 600, "longest_sequence": 230}
"""A table covering the small engines of the property tests (prompts <= 200, outputs <= 30)."""


@cache
def small_table(compiled: tuple[int, ...] | None):
    """The Llama-8B-class plan on h100-sxm for small engines; `compiled`: the seq_len buckets
    (None: every length), with 200 us of extra dispatch per kernel on the generic path."""
    return build_iteration_table(
        LLAMA_8B,
        preset("h100-sxm"),
        "standard",
        {},
        compiled_shapes=list(compiled) if compiled else None,
        dispatch_us=200.0,
        **SMALL,
    )


@cache
def small_all_compiled(compiled: tuple[int, ...] | None):
    """The all-compiled counterpart of `small_table(compiled)`."""
    shapes = all_compiled_shapes(list(compiled) if compiled else None, SMALL["max_tokens"])
    return build_iteration_table(
        LLAMA_8B, preset("h100-sxm"), "standard", {}, compiled_shapes=shapes,
        dispatch_us=200.0, **SMALL,
    )  # fmt: skip


def attribute(cfg, table=None, all_compiled=None, **kwargs):
    result = simulate_serving(cfg, table)
    return result, serving_counterfactual(result, table, all_compiled, **kwargs)


def every_value(counterfactual) -> list[tuple[str, str, float, float, dict]]:
    """(metric, percentile, value, value all off, drops) of each attributed percentile."""
    out = []
    for metric in METRICS:
        block = counterfactual[metric]
        if block is None:
            continue
        for p in ("p99", "p95"):
            out.append(
                (
                    metric,
                    p,
                    block[f"{p}_ms"],
                    block[f"{p}_all_off_ms"],
                    block[f"{p}_drop_if_off_ms"],
                )
            )
    return out


@settings(max_examples=25, deadline=None)
@given(
    seqs=st.integers(1, 8),
    budget=st.integers(16, 600),
    chunked=st.booleans(),
    spare=st.integers(0, 1500),
    cores=st.integers(1, 3),
    placement=st.sampled_from(["central-queue", "round-robin", "random", "least-loaded"]),
    model=st.booleans(),
    compiled=st.sampled_from([None, (64,), (128, 256)]),
    seed=st.integers(0, 2**31),
)
def test_shapley_values_are_efficient_exact_for_idle_drivers_and_skips_are_true_reruns(
    seqs, budget, chunked, spare, cores, placement, model, compiled, seed
) -> None:
    """On any small engine: the drops of each percentile sum to the whole drop (efficiency), a
    driver that cannot act gets exactly 0, every re-run that was skipped because its extra
    driver did nothing there gives the same tails as running it, and the pool's size changes
    no byte."""
    if not chunked:
        budget = max(budget, 200)
    cfg = config(
        rate=150.0,
        prompt=((16, 200), (0.5, 0.5)),
        output=((1, 30), (0.5, 0.5)),
        policy=ContinuousPolicy(seqs, budget, chunked, 230 + spare),
        service=ServiceSpec("model") if model else ServiceSpec("distribution", "exponential", 1.0),
        cores=cores,
        placement=placement,
        requests=300,
        seed=seed,
    )
    table = small_table(compiled) if model else None
    all_compiled = small_all_compiled(compiled) if model else None
    result, cf = attribute(cfg, table, all_compiled, workers=1)
    drivers = cf["drivers"]
    assert cf["subsets"] == 2 ** len(drivers) and cf["runs"] <= 2 ** len(drivers) - 1
    for metric, p, value, all_off, drops in every_value(cf):
        assert sum(drops.values()) == pytest.approx(value - all_off, rel=1e-9, abs=1e-9), (
            metric,
            p,
        )
        for d in DRIVERS:
            if d not in drivers:
                assert drops[d] == 0.0
    assert cf["latency"]["p99_ms"] == tails(result)["latency"][1]  # the run itself
    # every subset's outcome (reused or not) is what running it gives
    done, _ = counterfactual_runs(result, table, all_compiled, tuple(drivers), workers=1)
    for size in range(1, len(drivers) + 1):
        for subset in combinations(drivers, size):
            off = frozenset(subset)
            assert done[off].tails == tails(switched_off(result, table, all_compiled, off))
    # the pool's size and order change nothing
    _, pooled = attribute(cfg, table, all_compiled, workers=3)
    assert json.dumps(pooled) == json.dumps(cf)


def test_a_driver_that_cannot_act_gets_exactly_zero() -> None:
    """One engine (no imbalance), an unbounded KV cache (no preemption), every shape compiled
    (no fallback) and pinned iterations (no interference): no driver is active, no re-run is
    made and every drop is exactly 0; a KV limit that could bind but never does at this load
    gets exactly 0 too, its re-run skipped."""
    policy = ContinuousPolicy(8, 600, True, None)
    quiet = config(rate=20.0, policy=policy, service=pinned(1.0), placement="round-robin")
    _, cf = attribute(quiet)
    assert cf["drivers"] == [] and cf["runs"] == 0
    for _, _, value, all_off, drops in every_value(cf):
        assert value == all_off and set(drops.values()) == {0.0}

    model = config(rate=5.0, policy=policy, requests=2000)
    table = small_table(None)  # every length compiled
    assert "fallback" not in active_drivers(simulate_serving(model, table), table)
    # 8 sequences of 110 tokens need 880; 800 could bind, but at 5/s never does
    roomy = dataclasses.replace(model, policy=dataclasses.replace(policy, kv_cache_tokens=800))
    result, cf = attribute(roomy, table)
    assert result.kv_limited == 0 and "preemption" in cf["drivers"]
    assert cf["runs"] < cf["subsets"] - 1  # the unbounded-KV re-runs were provably the same
    for _, _, _, _, drops in every_value(cf):
        assert drops["preemption"] == 0.0 and drops["fallback"] == 0.0


def test_pinned_iterations_without_kv_limit_have_no_interference_and_no_preemption() -> None:
    """Theory: with a pinned iteration time a prefill chunk costs a decode step nothing (every
    iteration takes its draw whatever its batch), and without a KV limit nothing is preempted,
    so both switch-offs give the very same run, to the bit, and both drivers get 0."""
    cfg = config(
        rate=60.0,
        prompt=((100, 300), (1.0, 1.0)),
        output=((10, 200), (1.0, 1.0)),
        policy=ContinuousPolicy(64, 512, True, None),
        service=pinned(0.5),
        cores=2,
        placement="round-robin",
    )
    result, cf = attribute(cfg)
    assert cf["drivers"] == ["imbalance"]
    for _, _, _, _, drops in every_value(cf):
        assert drops["prefill_interference"] == 0.0 and drops["preemption"] == 0.0
    both = switched_off(result, None, None, frozenset({"prefill_interference", "preemption"}))
    assert np.array_equal(both.requests.finish_ms, result.requests.finish_ms)
    assert np.array_equal(both.requests.first_token_ms, result.requests.first_token_ms)


def test_interference_off_prices_decodes_alone_and_lowers_the_tpot_tail() -> None:
    """Whole 4k prompts beside decodes: with interference off no decode step pays for a prompt
    (the composition's prefill_interference is 0 for every request), TPOT p99 falls, and the
    Shapley value of the driver on TPOT p99 is positive."""
    table = build_iteration_table(
        LLAMA_8B, preset("h100-sxm"), "standard", {},
        max_num_seqs=32, max_tokens=8192, longest_sequence=4096 + 256,
    )  # fmt: skip
    cfg = config(
        rate=4.0,
        prompt=((256, 4096), (0.5, 0.5)),
        output=((256,), (1.0,)),
        policy=ContinuousPolicy(32, 8192, False, None),
        requests=1500,
    )
    result, cf = attribute(cfg, table)
    assert cf["drivers"] == ["prefill_interference"] and cf["runs"] == 1
    off = switched_off(result, table, None, frozenset({"prefill_interference"}))
    assert np.all(latency_parts(off)["prefill_interference"] == 0.0)
    assert latency_parts(result)["prefill_interference"].max() > 0
    assert cf["tpot"]["p99_all_off_ms"] < cf["tpot"]["p99_ms"]
    assert cf["tpot"]["p99_drop_if_off_ms"]["prefill_interference"] > 0


def test_fallback_off_compiles_only_the_chunks_that_fell_back() -> None:
    """The all-compiled table differs from the plan's only where a chunk took the generic path,
    and there it is faster (tuned, fused, no extra dispatch): so a prompt above every compiled
    bucket has a shorter TTFT tail with fallback off."""
    table, every = small_table((64,)), small_all_compiled((64,))
    merged = compiled_everywhere(table, every)
    fell = table.pre_fallback
    assert fell.any() and not merged.pre_fallback.any()
    assert np.array_equal(merged.pre_attn_ms[~fell], table.pre_attn_ms[~fell])
    assert np.all(merged.pre_attn_ms[fell] < table.pre_attn_ms[fell])
    cfg = config(
        rate=100.0,
        prompt=((200,), (1.0,)),
        output=((4,), (1.0,)),
        policy=ContinuousPolicy(8, 600, False, None),
        requests=2000,
    )
    _, cf = attribute(cfg, table, every)
    assert "fallback" in cf["drivers"]
    assert cf["ttft"]["p99_drop_if_off_ms"]["fallback"] > 0


def summary_of(cfg, table=None, all_compiled=None) -> dict:
    """The attributed serving summary of a run (command 'cmd')."""
    result = simulate_serving(cfg, table)
    summary = serving_summary(result, table, command="cmd")
    return with_attribution(summary, result, table, all_compiled)


def test_each_serving_class_is_recognised_on_a_run_built_to_have_it() -> None:
    """queueing/capacity: one sequence at a time near saturation, no driver active; KV-cache
    pressure: a cache of 100 tokens for 46-token sequences (admitted, then preempted as they
    grow); core imbalance: round-robin engines each serving one sequence at a time (a pooled
    queue would use an idle engine); mapping fallback: one-sequence engines whose every prompt
    is above the one compiled bucket, at a load the compiled path carries and the generic path
    does not; prefill interference: whole prompts beside up to 7 decodes; compute-bound
    iteration: a light load on the plan's iteration times."""
    long_tail = ((10, 200), (0.9, 0.1))
    one_at_a_time = ContinuousPolicy(1, 600, True, None)
    queueing = config(
        rate=850.0 / 29.0, output=long_tail, policy=one_at_a_time, service=pinned(1.0)
    )
    kv = config(
        rate=20.0,
        prompt=((16,), (1.0,)),
        output=((30,), (1.0,)),
        policy=ContinuousPolicy(8, 600, True, 100),
        requests=3000,
    )
    imbalance = config(
        rate=4 * 700.0 / 29.0,
        output=long_tail,
        policy=one_at_a_time,
        service=pinned(1.0),
        cores=4,
        placement="round-robin",
    )
    prompts = {"prompt": ((200,), (1.0,)), "output": ((4,), (1.0,)), "requests": 2000}
    fallback = config(rate=40.0, policy=ContinuousPolicy(1, 600, False, None), **prompts)
    interference = config(rate=100.0, policy=ContinuousPolicy(8, 600, False, None), **prompts)
    light = config(rate=2.0, policy=ContinuousPolicy(8, 600, True, None), requests=1000)
    tight = (small_table((64,)), small_all_compiled((64,)))
    cases = [
        ("queueing/capacity", queueing, (None, None)),
        ("KV-cache pressure", kv, (small_table(None), None)),
        ("core imbalance", imbalance, (None, None)),
        ("mapping fallback", fallback, tight),
        ("prefill interference", interference, tight),
        ("compute-bound iteration", light, (small_table(None), None)),
    ]
    for expected, cfg, tables in cases:
        summary = summary_of(cfg, *tables)
        cls = summary["classification"]
        assert cls["primary"]["class"] == expected, (expected, cls["scores_p99_tail"])
        assert cls["primary"]["command"] == "cmd"
        if expected == "KV-cache pressure":
            assert summary["preemptions"] > 0
            assert cls["primary"]["evidence"]["preemptions"] == summary["preemptions"]
        if expected == "mapping fallback":
            assert cls["primary"]["evidence"]["prefill_fallback_rate"] == 1.0


def test_summary_key_order_and_contract() -> None:
    """The attributed summary keeps the composition's keys and order, adds the counterfactual
    under tail_attribution_ms and the classification just before `command`; plain JSON."""
    cfg = config(rate=40.0, policy=ContinuousPolicy(8, 600, True, 480), requests=1000)
    table = small_table(None)
    result = simulate_serving(cfg, table)
    plain = serving_summary(result, table, command="cmd")
    full = with_attribution(plain, result, table)
    assert "classification" not in plain and "counterfactual" not in plain["tail_attribution_ms"]
    keys = list(full)
    assert keys[:-2] == [k for k in plain if k != "command"]
    assert keys[-2:] == ["classification", "command"]
    assert list(full["tail_attribution_ms"])[-1] == "counterfactual"
    cf = full["tail_attribution_ms"]["counterfactual"]
    assert list(cf) == ["drivers", *METRICS, "subsets", "runs", "off_means"]
    assert set(cf["latency"]["p99_drop_if_off_ms"]) == set(DRIVERS)
    json.dumps(full, allow_nan=False)


def test_workbench_run_of_the_serving_example_attributes_its_tail(capsys) -> None:
    """`workbench run --json` of the serving example carries the Shapley attribution and the
    class: whole prompts beside decodes drive the TPOT tail (interference), the pooled central
    queue has no imbalance driver, and the same command gives the same bytes; the text run
    says the drivers and the bottleneck after the tail."""
    from packets.examples import example_path
    from workbench.cli import main

    path = str(example_path("llm-serving-continuous"))
    command = ["run", path, "--requests", "3000", "--json"]
    assert main(command) == 0
    first = capsys.readouterr().out
    summary = json.loads(first)
    cf = summary["tail_attribution_ms"]["counterfactual"]
    # whole prompts beside decodes always interfere; preemption and fallback act only when the
    # run preempted or fell back (the example's KV cache and buckets cover this traffic)
    expected = ["prefill_interference"]
    expected += ["preemption"] if summary["preemptions"] > 0 else []
    expected += ["fallback"] if summary["prefill_fallback_rate"] > 0 else []
    assert cf["drivers"] == expected
    assert cf["tpot"]["p99_drop_if_off_ms"]["prefill_interference"] > 0
    assert cf["latency"]["p99_drop_if_off_ms"]["imbalance"] == 0.0
    assert cf["latency"]["p99_ms"] == summary["latency_ms"]["p99"]
    assert cf["ttft"]["p95_ms"] == summary["ttft_ms"]["p95"]
    cls = summary["classification"]
    assert cls["primary"]["command"] == summary["command"]
    scores = cls["scores_p99_tail"]
    assert scores["prefill interference"] >= 0.15  # primary or secondary
    assert main(command) == 0
    assert capsys.readouterr().out == first
    assert main(["run", path, "--requests", "3000"]) == 0
    text = capsys.readouterr().out
    assert "tail drivers" in text and f"bottleneck    {cls['primary']['class']}" in text
    assert text.index("TPOT") < text.index("tail drivers") < text.index("bottleneck")


def test_triage_serving_report_carries_the_class_only_when_asked() -> None:
    """`run_packet` (workbench run) attributes a serving run; the app's plain serving run
    (Baseline, Tune) does not, and is otherwise the same summary."""
    from packets.examples import example_path
    from packets.load import load_packet
    from triage.runs import run_packet, run_serving_scenario
    from triage.scenario import build_scenario

    loaded = load_packet(example_path("llm-serving-continuous"))
    report = run_packet(loaded, "chunked-prefill-768", requests=1000)
    assert report.classification is report.summary["classification"]
    assert report.counterfactual is report.summary["tail_attribution_ms"]["counterfactual"]
    assert report.classification["primary"]["class"] in CLASSES
    scenario = build_scenario(loaded, "chunked-prefill-768", requests=1000)
    plain = run_serving_scenario(scenario, loaded.name)
    assert plain.classification is None and plain.counterfactual is None
    stripped = {k: v for k, v in report.summary.items() if k != "classification"}
    stripped["tail_attribution_ms"] = {
        k: v for k, v in stripped["tail_attribution_ms"].items() if k != "counterfactual"
    }
    assert stripped == plain.summary
