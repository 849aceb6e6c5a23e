"""The model behind the command line: run, sweep, worksheet, telemetry compare."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model.compiler.measured import measured_dir
from packets.examples import example_path
from workbench.cli import main

DEFAULT = str(example_path("fusion-tiling-llama-decode"))
MAPPING = str(example_path("mapping-dynamic-shapes"))
CONTRACT = {
    "packet", "candidate", "seed", "requests", "measured_requests", "latency_ms",
    "queue_wait_ms", "service_ms", "throughput_per_s", "core_utilization", "fairness_jain",
    "fallback_rate", "launches_per_request", "hbm_peak_demand_ratio", "tail_attribution_ms",
    "sla", "classification",
}  # fmt: skip


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_run_json_follows_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(
        capsys, "run", MAPPING, "--candidate", "add-4096-bucket", "--requests", "3000", "--json"
    )
    assert set(out) >= CONTRACT
    assert (out["packet"], out["candidate"], out["requests"]) == (
        "mapping-dynamic-shapes",
        "add-4096-bucket",
        3000,
    )
    assert out["measured_requests"] == 3000 - int(3000 * 0.1)
    assert set(out["latency_ms"]) == {"mean", "p50", "p95", "p99", "max"}
    assert set(out["queue_wait_ms"]) == set(out["service_ms"]) == {"mean", "p50", "p95", "p99"}
    assert out["latency_ms"]["p99"] >= out["latency_ms"]["p95"] >= out["latency_ms"]["p50"]
    assert set(out["sla"]) == {"p95_ok", "p99_ok", "throughput_ok"}
    primary = out["classification"]["primary"]
    assert primary["command"].startswith(f"workbench run {MAPPING} --candidate add-4096-bucket")


def test_run_is_deterministic_and_the_seed_matters(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", MAPPING, "--requests", "2000", "--json")
    first, again = _json(capsys, *args), _json(capsys, *args)
    assert first == again
    other = _json(capsys, *args, "--seed", "99")
    assert other["latency_ms"] != first["latency_ms"]


def test_the_baseline_mapping_falls_back_and_the_added_bucket_removes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = _json(capsys, "run", MAPPING, "--requests", "3000", "--json")
    fixed = _json(
        capsys, "run", MAPPING, "--candidate", "add-4096-bucket", "--requests", "3000", "--json"
    )
    # 3072 and 4096 prompts (10% of the mix) are outside the baseline's buckets.
    assert 0.05 < base["fallback_rate"] < 0.2
    assert fixed["fallback_rate"] == 0.0


def test_run_text_puts_the_tail_first(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", MAPPING, "--requests", "2000"]) == 0
    out = capsys.readouterr().out
    assert out.index("p99") < out.index("p95") < out.index("p50") < out.index("mean")
    assert "bottleneck" in out and "reproduce     workbench run" in out


def test_unknown_candidate_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", MAPPING, "--candidate", "nope"]) == 2
    assert "no candidate 'nope'" in capsys.readouterr().err


def test_sweep_runs_the_grid_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(
        capsys, "sweep", MAPPING, "--set", "batch_policy.max_batch=1,4",
        "--set", "placement=round-robin,least-loaded",
        "--set", "inputs.workload.requests=1500", "--json",
    )  # fmt: skip
    assert [(r["batch_policy.max_batch"], r["placement"]) for r in rows] == [
        ("1", "round-robin"), ("1", "least-loaded"), ("4", "round-robin"), ("4", "least-loaded"),
    ]  # fmt: skip
    assert all(r["requests"] == 1500 for r in rows)


def test_sweep_over_load_raises_the_tail(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _json(
        capsys, "sweep", MAPPING, "--set", "inputs.workload.arrivals.rate_per_s=2,9",
        "--set", "inputs.workload.requests=3000", "--json",
    )  # fmt: skip
    assert rows[1]["latency_p99_ms"] > rows[0]["latency_p99_ms"]


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("batch_policy.max_batch=0", "batch_policy.max_batch: must be greater than 0"),
        ("placement=least-load", "did you mean 'least-loaded'"),
        ("compiled_shapes.seq_len=[512, 256]", "must be distinct and ascending"),
        ("inputs.workload.arrivals.rate_per_s=-3", "must be at least 0.001"),
        ("fusion=[[attn_norm]]", "fusion"),
        ("nosuch.knob=1", "no section 'nosuch'"),
        ("placement", "expected PATH=VALUE"),
    ],
)
def test_sweep_refuses_bad_values_before_running(
    setting: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", MAPPING, "--set", setting]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_worksheet_json_shows_fusion_cutting_launches(capsys: pytest.CaptureFixture[str]) -> None:
    base = _json(capsys, "worksheet", DEFAULT, "--json")
    fused = _json(capsys, "worksheet", DEFAULT, "--candidate", "standard-fusion", "--json")
    assert fused["candidate"] == "standard-fusion"
    assert fused["totals"]["launches_per_block"] < base["totals"]["launches_per_block"]
    assert any(k["bottleneck_shift"] == "memory+launch -> memory" for k in fused["kernels"])


def test_worksheet_on_a_serving_packet_reads_its_serving_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a serving packet the worksheet is per phase at the serving run's point: the decode
    batch is Little's law on the `run` summary, the chunk the budget less those decodes, and
    the mixed iteration is priced from the run's own iteration table."""
    serving = str(example_path("llm-serving-continuous"))
    name = "chunked-prefill-512"
    sheet = _json(capsys, "worksheet", serving, "--candidate", name, "--json")
    run = _json(capsys, "run", serving, "--candidate", name, "--json")
    assert (sheet["schema"], sheet["candidate"]) == ("handoff-serving-worksheet/1", name)
    little = run["throughput_per_s"] * (run["latency_ms"]["mean"] - run["ttft_ms"]["mean"]) / 1e3
    point = sheet["point"]
    assert point["decode_batch"] == round(little) and point["chunked"]
    assert point["chunk"] == 512 - point["decode_batch"]
    assert (sheet["prefill"]["point"]["seq_len"], sheet["decode"]["point"]["batch"]) == (
        point["chunk"],
        point["decode_batch"],
    )
    split = sheet["iteration"]["working"]
    assert split["chunk_bucket"] >= point["chunk"] and split["attention_shape"] == 512
    assert split["iteration_ms"] == pytest.approx(split["decode_alone_ms"] + split["chunk_ms"])
    capsys.readouterr()
    assert main(["worksheet", serving, "--candidate", name]) == 0
    text = capsys.readouterr().out
    assert "Serving worksheet:" in text and "## Prefill" in text and "## Decode" in text


def test_telemetry_compare_meets_the_gemm_target(capsys: pytest.CaptureFixture[str]) -> None:
    gemm = str(measured_dir() / "a100_gemm_bf16.csv")
    out = _json(capsys, "telemetry", "compare", gemm, "--hardware", "a100-sxm", "--json")
    assert out["rows"] == 9240 and out["mdape"] <= 0.12
    assert out["naive_roofline"]["mdape"] > 0.4
    assert {"rows", "mdape", "mape", "p90_ape", "median_ratio", "implausible_rows", "by_op"} <= set(
        out
    )


def test_telemetry_compare_rejects_bad_files_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("op,dtype,m,n,k\ngemm,bf16,1,2,3\n")
    result = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "telemetry", "compare", str(bad), "--hardware", "a100-sxm"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "bad.csv" in result.stderr
