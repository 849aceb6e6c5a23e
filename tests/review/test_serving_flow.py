"""Issue 14: sweep, validate, propose and recommend on a serving packet run the continuous
scheduler and judge the serving SLA (TTFT p95, TPOT p95, latency p95/p99), end to end on the
`llm-serving-continuous` example (real files, the real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from packets.load import load_packet
from packets.signoff import verify_packet
from triage.review.guards import review_guards
from triage.review.matrix import MatrixSpec, run_matrix
from triage.review.report_md import markdown_report
from triage.review.reproduce import reproduce
from triage.sweeps import parse_axis, run_grid
from workbench.cli import main

from .conftest import prepared_copy

EXAMPLE = "llm-serving-continuous"
CANDIDATE = "chunked-prefill-768"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The serving example (4,000 requests) after propose (default metric), validate --quick
    and recommend."""
    path = prepared_copy(tmp_path_factory.mktemp("serving"), EXAMPLE)
    assert main(["propose", str(path), "--candidate", CANDIDATE, "--rationale",
                 "Chunks of 768 keep the running decodes' steps short."]) == 0  # fmt: skip
    assert main(["validate", str(path), "--quick", "--quiet"]) == 0
    assert main(["recommend", str(path)]) == 0
    return path


def run_json(path: Path, capsys, *args: str) -> dict:
    assert main(["run", str(path), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_propose_ranks_by_tpot_and_records_the_serving_tails(served: Path, capsys) -> None:
    packet = load_packet(served).packet
    m = packet.outputs.mitigation
    assert m.primary_metric == "tpot_p95_ms"  # the default for a packet with a TPOT target
    base = run_json(served, capsys)
    chosen = run_json(served, capsys, "--candidate", CANDIDATE)
    # the proposal's figures are the continuous scheduler's, exactly as `workbench run` prints
    assert m.baseline.tpot_p95_ms == base["tpot_ms"]["p95"]
    assert m.baseline.ttft_p95_ms == base["ttft_ms"]["p95"]
    assert m.chosen.tpot_p95_ms == chosen["tpot_ms"]["p95"]
    assert m.chosen.p99_ms == chosen["latency_ms"]["p99"]
    assert m.chosen.tokens_per_s == chosen["tokens_per_s"]
    # chunking (a continuous-batching knob) applies: the decode steps get smoother
    assert m.chosen.tpot_p95_ms < m.baseline.tpot_p95_ms
    reasons = {a.candidate: a.reason for a in m.rejected}
    assert "ttft_p95" in reasons["chunked-prefill-2048"]  # the trade-off is named
    assert "ttft_p95" in reasons["small-kv-cache"]
    c = packet.outputs.classification
    assert "share of the slowest 1%'s latency" in c.primary.metric
    assert 0 < c.primary.value <= 1


def test_validate_runs_serving_cells_against_the_serving_sla(served: Path) -> None:
    packet = load_packet(served).packet
    v = packet.outputs.validation_matrix
    prompts = packet.inputs.workload.generation.prompt_len
    assert v.shape_mixes[0].values == sorted(prompts.values)  # the prompt mix, not seq_len
    assert v.shape_mixes[1].weights == v.shape_mixes[0].weights[::-1]
    assert len(v.cells) == 2 * 2 * 1 * 2
    for cell in v.cells:
        assert cell.ttft_p95_ms > 0 and cell.tpot_p95_ms > 0 and cell.tokens_per_s > 0
        assert cell.preemption_rate is not None and 0 < cell.kv_peak_ratio <= 1
        assert cell.hbm_peak_demand_ratio is None
        sla = packet.inputs.sla
        missed = {m.metric for m in cell.missed}
        assert ("ttft_p95_ms" in missed) == (cell.ttft_p95_ms > sla.ttft_p95_ms)
        assert ("tpot_p95_ms" in missed) == (cell.tpot_p95_ms > sla.tpot_p95_ms)
        assert cell.sla_ok == (not cell.missed)
    assert "KV cache peak" in v.memory.verdict
    assert v.memory.kv_peak_ratio_max == max(
        c.kv_peak_ratio for c in v.cells if c.config == CANDIDATE
    )


def test_a_production_cell_is_the_run_of_the_same_slice(served: Path, capsys) -> None:
    packet = load_packet(served).packet
    v = packet.outputs.validation_matrix
    cell = next(
        c for c in v.cells
        if c.config == CANDIDATE and c.load_factor == 1.0 and c.shape_mix == "production"
    )  # fmt: skip
    run = run_json(served, capsys, "--candidate", CANDIDATE, "--requests", str(v.requests))
    assert cell.ttft_p95_ms == run["ttft_ms"]["p95"]
    assert cell.tpot_p95_ms == run["tpot_ms"]["p95"]
    assert cell.p99_ms == run["latency_ms"]["p99"]
    assert cell.preemption_rate == run["preemption_rate"]


def test_serving_triggers_and_release(served: Path) -> None:
    packet = load_packet(served).packet
    sla = packet.inputs.sla
    triggers = {t.metric: t for t in packet.outputs.rollback_triggers}
    assert triggers["ttft_ms.p95"].threshold == sla.ttft_p95_ms
    assert triggers["tpot_ms.p95"].threshold == sla.tpot_p95_ms
    assert triggers["latency_ms.p99"].comparison == ">"
    assert "preemption_rate" in triggers and "prefill_fallback_rate" in triggers
    assert "fallback_rate" not in triggers  # a serving run's JSON names it prefill_fallback_rate
    release = packet.outputs.release
    assert "TTFT p95 or TPOT p95" in release.rule
    # the quick matrix's x1.25 cells miss the serving targets: named with metric and target
    assert any(r.startswith(("TTFT p95", "TPOT p95")) for r in release.reasons), release.reasons


def test_the_serving_outputs_reproduce_exactly(served: Path) -> None:
    loaded = load_packet(served)
    assert reproduce(loaded, str(served)) == []
    # the matrix was run on the default pool (one thread per CPU); one thread gives the same
    v = loaded.packet.outputs.validation_matrix
    spec = MatrixSpec(tuple(v.load_factors), len(v.seeds), v.requests)
    assert run_matrix(loaded, v.candidate, spec, parallelism=1) == v


def test_the_report_shows_the_serving_matrix(served: Path) -> None:
    loaded = load_packet(served)
    report = markdown_report(loaded, review_guards(loaded.packet), verify_packet(loaded))
    assert "| TTFT p95 ms | TPOT p95 ms |" in report
    cells = loaded.packet.outputs.validation_matrix.cells
    rows = [line for line in report.splitlines() if line.startswith("| x")]
    assert len(rows) == len(cells)
    for row, cell in zip(rows, cells, strict=True):
        assert f"| {cell.ttft_p95_ms:,.2f} | {cell.tpot_p95_ms:,.2f} |" in row
    chosen = loaded.packet.outputs.mitigation.chosen
    assert f"- chosen: TTFT p95 {chosen.ttft_p95_ms:,.2f} ms, TPOT p95" in report


def test_a_serving_metric_on_a_dynamic_packet_is_a_usage_error(tmp_path: Path, capsys) -> None:
    path = prepared_copy(tmp_path)
    before = path.read_bytes()
    code = main(["propose", str(path), "--candidate", "add-4096-bucket", "--metric",
                 "tpot_p95_ms", "--rationale", "Compile the missing bucket."])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tpot_p95_ms" in err and "serving" in err
    assert path.read_bytes() == before


def test_sweep_runs_the_continuous_scheduler(tmp_path: Path, capsys) -> None:
    """Only `chunked_prefill` changes between the two points: the dynamic batcher ignores it,
    the continuous scheduler splits the prompts (TTFT and TPOT move); each point is exactly
    the run of its configuration."""
    path = prepared_copy(tmp_path, EXAMPLE)
    loaded = load_packet(path)
    axes = [parse_axis("batch_policy.chunked_prefill=false,true")]
    frame = run_grid(loaded, None, axes, parallelism=1)
    whole, chunked = frame.to_dicts()
    assert whole["scheduler"] == chunked["scheduler"] == "continuous"
    assert whole["ttft_p95_ms"] != chunked["ttft_p95_ms"]
    assert whole["tpot_p95_ms"] != chunked["tpot_p95_ms"]
    base = run_json(path, capsys)
    assert whole["ttft_p95_ms"] == base["ttft_ms"]["p95"]
    assert whole["tpot_p99_ms"] == base["tpot_ms"]["p99"]
    assert whole["latency_p99_ms"] == base["latency_ms"]["p99"]
    assert whole["tokens_per_s"] == base["tokens_per_s"]
    assert whole["tpot_p95_ok"] == base["sla"]["tpot_p95_ok"]
    # same packet and seed, any thread count: the same rows
    assert run_grid(loaded, None, axes, parallelism=2).equals(frame)


def test_cli_sweep_of_serving_knobs_prints_ttft_and_tpot(tmp_path: Path, capsys) -> None:
    path = prepared_copy(tmp_path, EXAMPLE)
    assert main(["sweep", str(path), "--quiet", "--set", "batch_policy.chunked_prefill=true",
                 "--set", "batch_policy.max_num_batched_tokens=512,2048",
                 "--set", "inputs.workload.arrivals.rate_per_s=2.5,5"]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    head = lines[0].split()
    assert head[:3] == [
        "batch_policy.chunked_prefill",
        "batch_policy.max_num_batched_tokens",
        "inputs.workload.arrivals.rate_per_s",
    ]
    assert head[3:7] == ["ttft_p95_ms", "ttft_p99_ms", "tpot_p95_ms", "tpot_p99_ms"]
    assert "tokens_per_s" in head and "tpot_p95_ok" in head and len(lines) == 1 + 4
    assert main(["sweep", str(path), "--json", "--quiet", "--set",
                 "batch_policy.max_num_seqs=16,64"]) == 0  # fmt: skip
    few, many = json.loads(capsys.readouterr().out)
    assert few["ttft_p95_ms"] > many["ttft_p95_ms"]  # 16 running sequences: prompts queue


def test_a_sweep_point_the_serving_checks_refuse_is_one_line(tmp_path: Path, capsys) -> None:
    path = prepared_copy(tmp_path, EXAMPLE)
    code = main(["sweep", str(path), "--quiet", "--set",
                 "batch_policy.max_num_batched_tokens=512"])  # fmt: skip
    assert code == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1
    assert "batch_policy.max_num_batched_tokens" in err and "chunked_prefill" in err


def test_search_on_a_serving_packet_tunes_the_continuous_knobs(tmp_path: Path, capsys) -> None:
    """The search draws max_num_seqs, max_num_batched_tokens and chunked_prefill, holds TTFT
    and TPOT to the SLA, ranks by TPOT p95 by default, and saves a candidate whose run is the
    trial's; the same seed gives the same candidate."""
    one, two = prepared_copy(tmp_path / "one", EXAMPLE), prepared_copy(tmp_path / "two", EXAMPLE)
    args = ["--trials", "16", "--requests", "2000", "--save-as", "searched", "--quiet"]
    assert main(["search", str(one), *args]) == 0
    printed = capsys.readouterr().out
    assert "Pareto front (TPOT p95 against TTFT p95)" in printed
    assert main(["search", str(two), *args]) == 0
    capsys.readouterr()
    assert one.read_bytes().replace(b"/one/", b"/two/") == two.read_bytes()
    packet = load_packet(one).packet
    saved = next(c for c in packet.candidates if c.name == "searched")
    assert saved.provenance.objective == "tpot_p95"
    assert saved.batch_policy is not None and saved.batch_policy.chunked_prefill is True
    run = run_json(one, capsys, "--candidate", "searched", "--requests", "2000")
    sla = packet.inputs.sla
    assert run["ttft_ms"]["p95"] <= sla.ttft_p95_ms and run["tpot_ms"]["p95"] <= sla.tpot_p95_ms
    base = run_json(one, capsys, "--requests", "2000")
    assert run["tpot_ms"]["p95"] < base["tpot_ms"]["p95"]
    for alt in saved.provenance.rejected:  # cited alternatives carry the serving tails
        assert alt.tail.tpot_p95_ms is not None and alt.tail.ttft_p95_ms is not None


def test_a_serving_objective_on_a_dynamic_packet_is_one_line(tmp_path: Path, capsys) -> None:
    path = prepared_copy(tmp_path)
    before = path.read_bytes()
    code = main(["search", str(path), "--trials", "8", "--objective", "tpot_p95",
                 "--save-as", "s", "--quiet"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tpot_p95" in err and "serving" in err
    assert path.read_bytes() == before


def test_a_dynamic_batcher_knob_in_a_serving_sweep_is_one_line(tmp_path: Path, capsys) -> None:
    """max_batch is not read by the continuous scheduler: every point would be the same run."""
    path = prepared_copy(tmp_path, EXAMPLE)
    assert main(["sweep", str(path), "--quiet", "--set", "batch_policy.max_batch=8,16"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and len(err.splitlines()) == 1
    assert "batch_policy.max_batch" in err and "continuous scheduler" in err


def test_validate_prints_the_candidates_ttft_and_tpot(served: Path, tmp_path: Path, capsys):
    path = tmp_path / "again.yaml"
    path.write_bytes(served.read_bytes())
    assert main(["validate", str(path), "--quick", "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    cell = next(
        c for c in load_packet(path).packet.outputs.validation_matrix.cells
        if c.config == CANDIDATE and c.load_factor == 1.0 and c.shape_mix == "production"
    )  # fmt: skip
    assert f"(x1 production: TTFT p95 {cell.ttft_p95_ms:,.1f} ms, TPOT p95 " in line
    assert f"{cell.tpot_p95_ms:,.2f} ms)" in line
