"""Every review guard blocks or warns when its pitfall is present, and passes when it is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.load import load_packet
from triage.review.guards import review_guards
from triage.review.writing import with_outputs, write_packet
from workbench.cli import main

from .conftest import prepared_copy, take_through

FP8 = (
    b"candidates:\n",
    b"candidates:\n  - name: fp8\n    description: FP8 weights and activations.\n    dtype: fp8\n",
)
FP8_EVIDENCE = (b"        bf16: 0.004\n", b"        bf16: 0.004\n        fp8: 0.012\n")


def _status(path: Path) -> dict[str, tuple[str, str]]:
    return {g.id: (g.status, g.detail) for g in review_guards(load_packet(path).packet)}


def test_a_fresh_packet_is_blocked_on_every_missing_output(tmp_path: Path) -> None:
    status = _status(prepared_copy(tmp_path))
    for guard in ("slices", "matrix", "triggers", "release", "artifacts"):
        assert status[guard][0] == "block", guard
    assert "workbench propose" in status["slices"][1]


def test_editing_the_inputs_makes_every_output_stale(proposed: Path, tmp_path: Path) -> None:
    edited = tmp_path / "p.yaml"
    edited.write_bytes(proposed.read_bytes().replace(b"rate_per_s: 9.0", b"rate_per_s: 9.5", 1))
    status = _status(edited)
    assert status["slices"] == ("block", "classification, mitigation computed from older inputs")
    assert status["matrix"][0] == status["release"][0] == "block"


def test_precision_change_needs_evidence_and_a_fallback_path(tmp_path: Path) -> None:
    no_evidence = take_through(prepared_copy(tmp_path / "a", edits=(FP8,)), "fp8")
    assert _status(no_evidence)["precision"][0] == "block"
    assert "without measured" in _status(no_evidence)["precision"][1]
    with_evidence = take_through(prepared_copy(tmp_path / "b", edits=(FP8, FP8_EVIDENCE)), "fp8")
    status = _status(with_evidence)
    assert status["precision"][0] == "pass", status["precision"]
    # Remove the quality trigger (the fallback path): blocked again.
    loaded = load_packet(with_evidence)
    kept = [
        t for t in loaded.packet.outputs.rollback_triggers if not t.metric.startswith("quality.")
    ]
    write_packet(loaded, with_outputs(loaded.packet, rollback_triggers=kept))
    assert _status(with_evidence)["precision"] == (
        "block",
        "bf16 -> fp8 has no fallback path: add a rollback trigger on quality.mean log-prob delta vs fp32 reference",
    )


def test_a_fusion_change_is_blocked_until_validated_against_memory(tmp_path: Path) -> None:
    fused = (
        b"  - name: add-4096-bucket\n",
        b"  - name: aggressive\n    description: Aggressive fusion.\n    fusion: aggressive\n  - name: add-4096-bucket\n",
    )
    path = prepared_copy(tmp_path, edits=(fused,))
    assert (
        main(["propose", str(path), "--candidate", "aggressive", "--rationale", "fewer launches"])
        == 0
    )
    assert _status(path)["memory"][0] == "block"
    assert main(["validate", str(path), "--quick"]) == 0
    status, detail = _status(path)["memory"]
    assert (
        status in ("pass", "warn")
        and detail == load_packet(path).packet.outputs.validation_matrix.memory.verdict
    )


def test_synthetic_shapes_and_broad_bundles_warn(tmp_path: Path) -> None:
    bundle = (
        b"  - name: bucketed-batching\n",
        b"  - name: everything\n    description: Four knobs at once.\n    placement: round-robin\n"
        b"    compiled_shapes:\n      seq_len: [256, 512, 1024, 2048, 4096]\n"
        b"    batch_policy:\n      max_batch: 8\n      max_queue_delay_ms: 1.0\n"
        b"  - name: bucketed-batching\n",
    )
    synthetic = (b"shape_source: production", b"shape_source: synthetic")
    path = take_through(prepared_copy(tmp_path, edits=(bundle, synthetic)), "everything")
    status = _status(path)
    assert status["shapes"][0] == "warn" and "synthetic shapes only" in status["shapes"][1]
    assert status["bundle"][0] == "warn" and "4 knobs" in status["bundle"][1]
    assert load_packet(path).packet.outputs.release.recommendation != "ship"  # warnings guard it


def test_export_is_refused_while_a_guard_blocks(
    proposed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(proposed), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "artifacts" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()
