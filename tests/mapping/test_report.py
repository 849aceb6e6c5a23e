"""The closed-loop mapping report on the mapping example with model-generated telemetry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from model.compiler.calibration import CALIBRATED_FIELDS
from packets.load import parse_packet
from tests.telemetry.test_chrome_trace import pytorch_trace
from triage.mapping.report import SCHEMA, action_to_candidate, report
from triage.scenario import build_scenario

from .conftest import REQUESTS, TRUE_FIELDS

TOP_KEYS = {"schema", "packet", "topic", "candidate", "command", "seed", "hardware", "inputs",
            "shape_mix", "accuracy", "calibration", "observed", "adaptation", "actions", "notes"}  # fmt: skip


@pytest.fixture(scope="module")
def full(mapping_packet, telemetry_dir: Path) -> dict:
    files = [telemetry_dir / "requests.csv", telemetry_dir / "kernels.csv"]
    return report(mapping_packet, files, command="workbench report x")


def test_report_has_the_documented_keys_and_is_plain_json(full) -> None:
    assert set(full) == TOP_KEYS and full["schema"] == SCHEMA
    text = json.dumps(full, allow_nan=False)
    assert json.loads(text) == full
    assert full["inputs"]["requests"] == REQUESTS and full["inputs"]["kernel_rows"] == 132
    assert full["shape_mix"]["source"] == "request telemetry"
    assert full["shape_mix"]["total_variation"] < 0.05  # the telemetry follows the packet's mix


def test_accuracy_finds_the_optimistic_plan(full) -> None:
    acc = full["accuracy"]
    assert acc["rows"] == 132 and acc["bias"] > 0.1  # the device is slower than the envelope
    assert [b["label"] for b in acc["by_bucket"]] == [
        "1-256", "257-512", "513-1024", "1025-2048", ">2048 (fallback)"]  # fmt: skip
    assert acc["worst"][0]["where"].startswith(str(Path(acc["worst"][0]["where"]).parent))
    assert ":" in acc["worst"][0]["where"] and "kernels.csv" in acc["worst"][0]["where"]
    assert set(acc["mispredicts_most"]) == {"bucket", "op_bucket", "tile"}


def test_calibration_recovers_the_device(full) -> None:
    cal = full["calibration"]
    for field, value in TRUE_FIELDS.items():
        assert cal["fitted"][field] == pytest.approx(value, rel=0.1), field
    assert cal["heldout_mdape"] < 0.06 < cal["original_heldout_mdape"]


def test_observed_requests_run_slower_than_the_compile_plan_predicts(full) -> None:
    obs = full["observed"]
    assert obs["requests"] == REQUESTS - int(REQUESTS * 0.1)
    assert obs["p99"]["ratio"] < 0.95 and obs["p50"]["ratio"] < 0.95
    assert obs["excluded_on_read"] == {}


def test_adaptation_gains_and_costs(full) -> None:
    ad = full["adaptation"]
    assert ad["compile_only"]["compiled_shapes"] == [256, 512, 1024, 2048]
    assert ad["runtime_adaptation"]["fallback_rate"] == 0.0
    assert ad["gain"]["p99_ms"] > 0 and ad["gain"]["capacity_per_s"] > 0
    assert ad["cost"]["added_buckets"] == [128, 768, 1536, 3072, 4096]
    assert ad["cost"]["compile_ms"] > 0 and ad["cost"]["memory_bytes"] > 0


def test_actions_are_ranked_by_gain_per_cost_and_cite_evidence(full) -> None:
    actions = full["actions"]
    kinds = {a["kind"] for a in actions}
    assert {"add_bucket", "widen_bucket", "recalibrate"} <= kinds
    positive = [a for a in actions if a["gain"]["p99_ms"] > 0]
    per_cost = [a["gain_per_cost"] for a in positive]
    assert per_cost == sorted(per_cost, reverse=True)
    assert actions[: len(positive)] == positive  # losses come last
    assert all(a["recommended"] == (a["gain"]["p99_ms"] > 0) for a in actions)
    fallback = next(a for a in actions if a["id"] == "add-bucket-4096")
    # Whether it pays is the model's call (on Hopper the persistent cuBLAS path the generic
    # shapes take is fast, so padding 3072 prompts to 4096 can cost more than falling back);
    # the evidence is the fallback requests it would serve.
    assert fallback["evidence"]["requests"]["requests"] > 0
    assert all("requests.csv:" in w for w in fallback["evidence"]["requests"]["first"])
    recal = next(a for a in actions if a["kind"] == "recalibrate")
    assert recal["recommended"] and recal["candidate"] is None
    assert recal["target"]["fields"] == list(CALIBRATED_FIELDS)


def test_the_report_is_deterministic(mapping_packet, telemetry_dir: Path, full) -> None:
    same = [telemetry_dir / "requests.csv", telemetry_dir / "kernels.csv"]
    assert json.dumps(report(mapping_packet, same, command="workbench report x")) == json.dumps(
        full
    )
    files = [telemetry_dir / "requests.parquet", telemetry_dir / "kernels.csv"]
    again = report(mapping_packet, files, command="workbench report x")
    # Parquet and CSV hold the same requests: everything but the file names agrees.
    assert json.dumps(again["adaptation"]) == json.dumps(full["adaptation"])
    assert again["calibration"] == full["calibration"]
    assert [a["id"] for a in again["actions"]] == [a["id"] for a in full["actions"]]


def test_zero_gain_when_every_shape_is_compiled(mapping_packet) -> None:
    out = report(mapping_packet, candidate="dense-buckets")
    ad = out["adaptation"]
    assert ad["gain"]["p99_ms"] == 0.0 and ad["gain"]["capacity_per_s"] == 0.0
    assert ad["cost"]["kernels"] == 0 and ad["cost"]["compile_ms"] == 0.0
    assert out["actions"] == [] and out["accuracy"] is None and out["observed"] is None


def test_a_named_candidate_as_the_runtime_adaptation(mapping_packet) -> None:
    out = report(mapping_packet, adapted="dense-buckets")
    assert out["adaptation"]["runtime_adaptation"]["config"] == "dense-buckets"
    assert out["adaptation"]["gain"]["p99_ms"] > 0


def test_an_action_becomes_a_candidate_the_packet_accepts(mapping_packet, full) -> None:
    top = next(a for a in full["actions"] if a["applies_as"] == "candidate")
    overrides = action_to_candidate(mapping_packet.packet, top)
    data = yaml.safe_load(mapping_packet.raw)
    data["candidates"].append(overrides)
    loaded = parse_packet(yaml.safe_dump(data).encode(), "with-action.yaml")
    scenario = build_scenario(loaded, overrides["name"])
    assert list(scenario.config.compiled_shapes.seq_len) == top["compiled_shapes"]
    # Applying it twice gives a new name, never a duplicate candidate.
    data["candidates"].append(action_to_candidate(loaded.packet, top))
    assert data["candidates"][-1]["name"] == f"{overrides['name']}-2"
    recal = next(a for a in full["actions"] if a["kind"] == "recalibrate")
    with pytest.raises(ValueError, match=r"inputs\.hardware"):
        action_to_candidate(mapping_packet.packet, recal)


def test_chrome_trace_gemms_join_the_kernel_rows(mapping_packet, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(pytorch_trace()))
    out = report(mapping_packet, [trace])
    assert out["inputs"]["files"]["trace"] == [str(trace)]
    acc = out["accuracy"]
    assert acc["rows_read"] >= 1 and acc["not_compared_trace_kernels"]["not_gemm"] > 0
    assert any("trace.json: event" in w["where"] for w in acc["worst"])


def test_every_key_is_documented(full) -> None:
    """The schema block of model/mapping/README.md names every key the report writes."""
    readme = (Path(__file__).resolve().parents[2] / "model" / "mapping" / "README.md").read_text()
    block = readme[readme.index("## JSON") :]
    block = block[: block.index("## Figures")]

    data_keyed = {"by_op", "original", "fitted", "excluded_on_read", "bounds", "loss", "cells"}

    def keys(value, depth: int = 0):
        if isinstance(value, dict) and depth < 3:
            for key, inner in value.items():
                yield key
                if key not in data_keyed:
                    yield from keys(inner, depth + 1)
        elif isinstance(value, list) and value and depth < 3:
            yield from keys(value[0], depth + 1)

    shape_columns = {"m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim",
                     "kind", "rows", "cols", "layer_op"}  # fmt: skip
    section_keys = {"accuracy", "calibration", "observed", "adaptation"}
    found = set(keys({k: v for k, v in full.items() if k not in section_keys}))
    for section in section_keys:
        found |= set(keys(full[section]))
    for action in full["actions"]:
        found |= set(keys(action))
    missing = sorted(k for k in found - shape_columns if k not in block)
    assert not missing, missing
    assert "by_op {op:" in block and "fitted {field: value}" in block
