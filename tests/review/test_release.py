"""The release rule and owner overrides."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packets.load import load_packet
from workbench.cli import main

from .conftest import prepared_copy, take_through


def test_missing_the_sla_at_production_load_holds(tmp_path: Path) -> None:
    # Halve the p99/p95 targets: nothing meets them.
    tight = (
        b"  sla:\n    p95_ms: 900.0\n    p99_ms: 1500.0\n",
        b"  sla:\n    p95_ms: 9.0\n    p99_ms: 15.0\n",
    )
    path = take_through(prepared_copy(tmp_path, edits=(tight,)), "add-4096-bucket")
    release = load_packet(path).packet.outputs.release
    assert release.recommendation == release.computed == "hold"
    assert release.reasons[0].startswith("p95 at load x1 on the production mix: ")
    assert "ms > 9.00 ms (SLA p95_ms; seed " in release.reasons[0]


def test_meeting_the_sla_everywhere_with_a_real_gain_ships_or_is_guarded(proposed: Path) -> None:
    out = load_packet(proposed).packet.outputs
    cand = [c for c in out.validation_matrix.cells if c.config == "add-4096-bucket"]
    if all(c.sla_ok for c in cand):
        assert out.release.computed in ("ship", "ship-guarded")
    else:
        assert out.release.computed in ("hold", "ship-guarded")
    assert out.release.reasons


def test_an_override_needs_a_written_rationale_and_is_recorded(
    proposed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    shutil.copy(proposed, path)
    computed = load_packet(path).packet.outputs.release.computed
    other = "hold" if computed != "hold" else "ship-guarded"
    assert main(["recommend", str(path), "--override", other, "--role", "runtime-lead"]) == 2
    assert (
        main(
            [
                "recommend",
                str(path),
                "--override",
                other,
                "--role",
                "runtime-lead",
                "--rationale",
                "ok",
            ]
        )
        == 2
    )
    assert "written rationale" in capsys.readouterr().err
    why = "Holiday traffic freeze: we ship nothing this week regardless of the matrix."
    assert (
        main(
            [
                "recommend",
                str(path),
                "--override",
                other,
                "--role",
                "runtime-lead",
                "--rationale",
                why,
            ]
        )
        == 0
    )
    release = load_packet(path).packet.outputs.release
    assert (release.recommendation, release.computed) == (other, computed)
    assert (
        release.override.rationale == why
        and release.override.principal == "tomas.lindgren@example.com"
    )
