"""The serving packet contract end to end: the example, `workbench run --json`, the checks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from model.runtime.serving import simulate_serving
from packets.examples import example_bytes, example_path
from packets.load import load_packet
from triage.scenario import build_scenario
from workbench.cli import main

EXAMPLE = "llm-serving-continuous"
REQUESTS = "3000"


def run_json(capsys, *args: str, requests: str = REQUESTS) -> dict:
    command = ["run", str(example_path(EXAMPLE)), "--requests", requests, "--json", *args]
    assert main(command) == 0
    return json.loads(capsys.readouterr().out)


def test_run_json_carries_the_serving_contract_and_is_reproducible(capsys) -> None:
    first = run_json(capsys)
    assert (first["packet"], first["candidate"], first["scheduler"]) == (
        EXAMPLE,
        "baseline",
        "continuous",
    )
    for key in ("ttft_ms", "tpot_ms", "latency_ms"):
        stats = first[key]
        assert list(stats) == ["mean", "p50", "p95", "p99", "max"]
        assert 0 < stats["p50"] <= stats["p95"] <= stats["p99"] <= stats["max"]
    assert first["tokens_per_s"] > 0 and first["preemptions"] == 0
    timeline = first["kv_cache"]["timeline"]
    assert len(timeline["t_ms"]) == len(timeline["occupancy"]) == 200
    assert 0 < max(timeline["occupancy"]) <= 1
    parts = first["tail_attribution_ms"]["slowest_1pct"]
    total = sum(
        parts[k] for k in ("queueing", "prefill", "decode", "prefill_interference", "preemption")
    )
    assert total == pytest.approx(parts["latency_ms"], rel=1e-9)
    assert parts["prefill_interference"] > 0  # whole prompts stall the decodes riding along
    again = run_json(capsys)
    assert json.dumps(again) == json.dumps(first)


def test_chunked_prefill_candidate_trades_ttft_for_tpot(capsys) -> None:
    base = run_json(capsys)
    small = run_json(capsys, "--candidate", "chunked-prefill-512")
    assert small["tpot_ms"]["p95"] < base["tpot_ms"]["p95"]
    assert small["tpot_ms"]["p99"] < base["tpot_ms"]["p99"]
    assert small["ttft_ms"]["p95"] > base["ttft_ms"]["p95"]
    # a prompt takes several iterations in chunks of 512: more, shorter iterations
    assert small["iterations"] > base["iterations"]


def test_small_kv_cache_candidate_preempts_and_completes(capsys) -> None:
    report = run_json(capsys, "--candidate", "small-kv-cache", requests="20000")
    assert report["preemptions"] > 0
    assert report["kv_cache"]["peak_tokens"] <= report["kv_cache"]["capacity_tokens_per_engine"]
    assert report["measured_requests"] == 18000
    assert report["tail_attribution_ms"]["all_measured"]["preemption"] > 0


def test_text_run_shows_ttft_and_tpot(capsys) -> None:
    assert main(["run", str(example_path(EXAMPLE)), "--requests", "2000"]) == 0
    out = capsys.readouterr().out
    assert "TTFT" in out and "TPOT" in out and "tokens/s" in out and "preemptions" in out


def _sla_ok(result, sla) -> bool:
    m = result.measured
    latency = result.requests.latency_ms[m]
    return bool(
        np.percentile(latency, 95) <= sla.p95_ms and np.percentile(latency, 99) <= sla.p99_ms
    )


def test_continuous_batching_serves_more_tokens_than_request_level_at_the_same_sla() -> None:
    """Highest load on a rate ladder at which each meets the example's end-to-end SLA: the
    continuous scheduler sustains more output tokens per second than admitting only into an
    empty engine (request-level batching), with the same iteration costs."""
    scenario = build_scenario(load_packet(example_path(EXAMPLE)), requests=2000)
    base, table = scenario.serving, scenario.iteration_table
    best = {False: 0.0, True: 0.0}
    for rate in (0.5, 1.0, 2.0, 4.0, 6.0):
        arrivals = dataclasses.replace(base.workload.arrivals, rate_per_s=rate)
        config = dataclasses.replace(
            base, workload=dataclasses.replace(base.workload, arrivals=arrivals)
        )
        for request_level in (False, True):
            result = simulate_serving(config, table, request_level=request_level)
            if _sla_ok(result, base.sla):
                r, m = result.requests, result.measured
                window = r.finish_ms[m].max() - r.arrival_ms[m].min()
                best[request_level] = max(best[request_level], r.output_len[m].sum() / window)
    assert best[False] > 0
    assert best[False] > 1.5 * best[True]


def _write(tmp_path: Path, old: str, new: str) -> Path:
    text = example_bytes(EXAMPLE).decode()
    assert old in text
    path = tmp_path / "p.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    ("old", "new", "needle", "message"),
    [
        (
            "max_num_batched_tokens: 8192",
            "max_num_batched_tokens: 4096",
            "max_num_batched_tokens: 4096",
            "baseline.batch_policy.max_num_batched_tokens: 4096 cannot hold the longest prompt",
        ),
        (
            "  placement: central-queue",
            "  placement: shape-affinity",
            "placement: shape-affinity",
            "baseline.placement: shape-affinity does not apply to scheduler continuous",
        ),
        (
            "      phase: serving",
            "      phase: decode",
            "scheduler: continuous",
            "baseline.batch_policy.scheduler: continuous needs inputs.workload.block.phase serving",
        ),
        (
            "      kv_cache_tokens: 72000",
            "      kv_cache_tokens: 4000",
            "kv_cache_tokens: 4000",
            "candidates[3].batch_policy.kv_cache_tokens: 4000 cannot hold the longest sequence",
        ),
        (
            "    requests: 20000",
            "    requests: 2000000",
            "requests: 2000000",
            "inputs.workload.requests: a serving run is capped at 1,000,000 requests",
        ),
        (
            "    preset: h100-sxm\n",
            "    preset: h100-sxm\n    hbm_gib: 10.0\n",
            "  batch_policy:",
            "baseline.batch_policy: kv_cache_tokens: the weights (13.0 GiB) leave no room",
        ),
    ],
)
def test_bad_serving_fields_fail_check_with_one_line_at_the_field(
    tmp_path: Path, capsys, old: str, new: str, needle: str, message: str
) -> None:
    path = _write(tmp_path, old, new)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr()
    lines = [line for line in (err.out + err.err).splitlines() if line.strip()]
    assert lines and all(line.startswith(f"{path}:") for line in lines), lines
    assert any(line.startswith(f"{path}:{_line_of(path, needle)}: {message}") for line in lines)
    assert "Traceback" not in err.err


def test_serving_runs_are_capped_with_a_usage_error(capsys) -> None:
    assert main(["run", str(example_path(EXAMPLE)), "--requests", "1000001"]) == 2
    err = capsys.readouterr().err
    assert "--requests 1000001 is over the cap of 1000000 requests per serving run" in err
    assert len(err.strip().splitlines()) == 1
