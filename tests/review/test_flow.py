"""propose -> validate -> recommend -> artifacts -> three signatures -> verify --reproduce -> export."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from packets.load import load_packet
from tests.signing.conftest import TestKey
from triage.review.guards import review_guards
from workbench.cli import main

ROLES = ("compiler-lead", "runtime-lead", "observability-engineer")


def test_outputs_are_written_and_tail_first(proposed: Path) -> None:
    out = load_packet(proposed).packet.outputs
    c, m, v, r = out.classification, out.mitigation, out.validation_matrix, out.release
    assert c.primary.bottleneck and c.slice.command.startswith("workbench run ")
    assert c.question.startswith("Which first-principles bottleneck class")
    assert m.candidate == "add-4096-bucket" and m.knobs == ["compiled_shapes.seq_len"]
    assert {a.candidate for a in m.rejected} == {"dense-buckets", "bucketed-batching"}
    assert all(a.reason for a in m.rejected)
    assert len(v.cells) == 2 * 2 * 1 * 2  # loads x mixes x seeds x (baseline, candidate)
    assert {x.shape_mix for x in v.cells} == {"production", "long-tail"}
    assert r.recommendation in ("ship", "ship-guarded", "hold") and r.rule
    assert any(
        t.metric == "latency_ms.p99" and t.threshold == 1500.0 for t in out.rollback_triggers
    )


def test_the_added_bucket_removes_fallback_in_the_matrix(proposed: Path) -> None:
    v = load_packet(proposed).packet.outputs.validation_matrix
    base = [c for c in v.cells if c.config == "baseline"]
    cand = [c for c in v.cells if c.config == "add-4096-bucket"]
    assert min(c.fallback_rate for c in base) > 0.05
    assert max(c.fallback_rate for c in cand) == 0.0


def test_full_flow_signs_verifies_reproduces_and_exports(
    proposed: Path, tmp_path: Path, keys: dict[str, TestKey], capsys: pytest.CaptureFixture[str]
) -> None:
    packet = tmp_path / "p.yaml"
    shutil.copy(proposed, packet)
    # Signing is refused while owners lack closure artifacts (a blocking guard).
    assert main(["sign", str(packet), "--role", ROLES[0], "--key", str(keys["ed25519"].path)]) == 2
    assert "artifacts" in capsys.readouterr().err
    for role in ROLES[1:]:
        assert main(["artifact", str(packet), "--role", role, "--ref", f"docs/{role}.md"]) == 0
    assert main(["recommend", str(packet)]) == 0
    assert not [g for g in review_guards(load_packet(packet).packet) if g.status == "block"]
    for role, kind in zip(ROLES, ("ed25519", "ecdsa-p256", "rsa-3072"), strict=True):
        assert main(["sign", str(packet), "--role", role, "--key", str(keys[kind].path)]) == 0
    owners = {o.role: o.principal for o in load_packet(packet).packet.owners}
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("".join(f"{owners[r]} {keys[k].public_line}\n" for r, k in
                               zip(ROLES, ("ed25519", "ecdsa-p256", "rsa-3072"), strict=True)))  # fmt: skip
    capsys.readouterr()
    assert main(["verify", str(packet), "--allowed-signers", str(allowed), "--reproduce"]) == 0
    out = capsys.readouterr().out
    assert "outputs reproduced exactly" in out and out.count(" valid ") == 3
    # ssh-keygen agrees, independently of the workbench.
    assert main(["verify", str(packet), "--allowed-signers", str(allowed), "--explain"]) == 0
    script = tmp_path / "explain.sh"
    script.write_text(capsys.readouterr().out)
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.count("Good") == 3, (
        result.stdout + result.stderr
    )
    # Export: the signed bytes, and a readable report.
    exported = tmp_path / "exported.yaml"
    assert main(["export", str(packet), "-o", str(exported)]) == 0
    assert exported.read_bytes() == packet.read_bytes()
    assert main(["export", str(packet), "-o", str(exported)]) == 2  # a signed packet is there
    assert main(["export", str(packet), "-o", str(exported), "--force"]) == 0
    assert (tmp_path / "exported.yaml.bak").read_bytes() == packet.read_bytes()
    report = tmp_path / "report.md"
    assert main(["export", str(packet), "-o", str(report), "--format", "markdown"]) == 0
    text = report.read_text()
    for heading in ("## Bottleneck classification", "## Validation matrix", "## Rollback triggers",
                    "## Release recommendation", "## Review guards", "## Signatures"):  # fmt: skip
        assert heading in text


def test_reproduce_catches_a_doctored_number(
    proposed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packet = tmp_path / "p.yaml"
    raw = proposed.read_bytes()
    p99 = load_packet(proposed).packet.outputs.validation_matrix.cells[0].p99_ms
    text = f"p99_ms: {p99!r}".encode()
    assert text in raw
    packet.write_bytes(raw.replace(text, f"p99_ms: {p99 * 0.9!r}".encode(), 1))
    capsys.readouterr()
    assert main(["verify", str(packet), "--reproduce"]) == 1
    assert ".p99_ms: recorded" in capsys.readouterr().out
