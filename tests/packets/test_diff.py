"""`workbench diff` reports changed leaves by section and matches lists by identity."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.diffing import diff_packets
from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.load import parse_packet
from workbench.cli import main


def _edited(old: bytes, new: bytes) -> bytes:
    raw = example_bytes(DEFAULT_EXAMPLE)
    assert old in raw
    return raw.replace(old, new, 1)


def test_identical_packets_have_no_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a.yaml"
    a.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    assert main(["diff", str(a), str(a)]) == 0
    assert capsys.readouterr().out.strip() == "no changes"


def test_changes_are_grouped_by_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    b.write_bytes(
        _edited(b"max_batch: 8", b"max_batch: 16").replace(
            b"rate_per_s: 250.0", b"rate_per_s: 450.0"
        )
    )
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "== inputs",
        "  ~ inputs.workload.arrivals.rate_per_s: 250.0 -> 450.0",
        "== baseline",
        "  ~ baseline.batch_policy.max_batch: 8 -> 16",
    ]


def test_reordered_candidates_are_not_a_change_but_a_rename_is() -> None:
    base = parse_packet(example_bytes(DEFAULT_EXAMPLE)).packet
    reordered = base.model_copy(update={"candidates": list(reversed(base.candidates))})
    assert diff_packets(base, reordered) == []
    renamed = parse_packet(_edited(b"name: aggressive-fusion", b"name: aggressive-v2")).packet
    kinds = {(c.path, c.kind) for c in diff_packets(base, renamed)}
    assert kinds == {
        ("candidates[aggressive-fusion]", "removed"),
        ("candidates[aggressive-v2]", "added"),
    }
