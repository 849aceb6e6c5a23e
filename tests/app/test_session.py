"""The edit session: edits are checked like a packet file, refused ones leave it unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.dump import dump_packet
from packets.errors import Problem, UsageError
from packets.load import load_packet
from workbench.core.session import (
    WorkingPacket,
    apply_edit,
    changed_fields,
    save_packet,
    set_pending,
    source_changed,
)

from .conftest import working_for

P95 = ("inputs", "sla", "p95_ms")
CV = ("inputs", "workload", "arrivals", "cv")


@pytest.fixture
def working(packet_file: Path) -> WorkingPacket:
    return working_for(packet_file)


def test_valid_edit_changes_the_packet_and_marks_it_dirty(working: WorkingPacket) -> None:
    assert not working.dirty
    edited = apply_edit(working, P95, 70.0)
    assert isinstance(edited, WorkingPacket)
    assert edited.packet.inputs.sla.p95_ms == 70.0
    assert edited.dirty and edited.has_unsaved_work
    assert working.packet.inputs.sla.p95_ms == 62.5  # the old one is untouched


def test_editing_back_to_the_file_value_is_clean_again(working: WorkingPacket) -> None:
    edited = apply_edit(working, P95, 70.0)
    assert isinstance(edited, WorkingPacket)
    back = apply_edit(edited, P95, 62.5)
    assert isinstance(back, WorkingPacket)
    assert not back.dirty


def test_out_of_bounds_value_is_refused_with_the_schema_message(working: WorkingPacket) -> None:
    refused = apply_edit(working, P95, -1.0)
    assert isinstance(refused, Problem)
    assert refused.path == P95
    assert "must be at least 0.001" in refused.message


def test_cross_field_refusal_names_the_other_field(working: WorkingPacket) -> None:
    refused = apply_edit(working, P95, 100.0)  # above the p99 target of 76 ms
    assert isinstance(refused, Problem)
    assert refused.path == P95
    assert refused.message.startswith("inputs.sla.p99_ms: p99 target 76.0 ms is below")


def test_setting_a_field_that_does_not_apply_is_refused(working: WorkingPacket) -> None:
    refused = apply_edit(working, CV, 1.5)  # cv only applies to gamma arrivals
    assert isinstance(refused, Problem)
    assert "applies only to process gamma" in refused.message


def test_none_removes_an_optional_field(working: WorkingPacket) -> None:
    path = ("inputs", "sla", "min_throughput_per_s")
    edited = apply_edit(working, path, None)
    assert isinstance(edited, WorkingPacket)
    assert edited.packet.inputs.sla.min_throughput_per_s is None


def test_warnings_are_recomputed_after_each_edit(working: WorkingPacket) -> None:
    assert working.warnings == ()
    edited = apply_edit(working, ("inputs", "workload", "requests"), 500)
    assert isinstance(edited, WorkingPacket)
    assert [w.path for w in edited.warnings] == [("inputs", "workload", "requests")]
    assert edited.warnings[0].severity == "warning"


def test_unknown_path_is_refused_not_raised(working: WorkingPacket) -> None:
    refused = apply_edit(working, ("inputs", "nope", "x"), 1)
    assert isinstance(refused, Problem)
    assert "no such field" in refused.message


def test_pending_text_counts_as_unsaved_and_a_valid_edit_clears_it(
    working: WorkingPacket,
) -> None:
    pending = set_pending(working, P95, "6o")
    assert pending.pending == {"inputs.sla.p95_ms": "6o"}
    assert pending.has_unsaved_work and not pending.dirty
    edited = apply_edit(pending, P95, 61.0)
    assert isinstance(edited, WorkingPacket)
    assert edited.pending == {}


def test_save_writes_canonical_bytes_and_marks_saved(working: WorkingPacket) -> None:
    edited = apply_edit(working, P95, 70.0)
    assert isinstance(edited, WorkingPacket)
    saved = save_packet(edited)
    assert not saved.dirty
    assert edited.source is not None
    assert edited.source.read_bytes() == dump_packet(edited.packet)
    assert load_packet(edited.source).packet.inputs.sla.p95_ms == 70.0
    assert not source_changed(saved)


def test_source_changed_sees_a_file_rewritten_underneath(working: WorkingPacket) -> None:
    assert working.source is not None
    working.source.write_bytes(working.source.read_bytes() + b"\n# edited elsewhere\n")
    assert source_changed(working)


def test_save_into_a_missing_folder_is_a_usage_error(
    working: WorkingPacket, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        save_packet(working, tmp_path / "missing" / "p.yaml")


def test_changed_fields_lists_each_difference(working: WorkingPacket) -> None:
    edited = apply_edit(working, P95, 70.0)
    assert isinstance(edited, WorkingPacket)
    edited = apply_edit(edited, ("inputs", "sla", "min_throughput_per_s"), None)
    assert isinstance(edited, WorkingPacket)
    assert changed_fields(working.packet, edited.packet) == [
        "inputs.sla.p95_ms: 62.5 -> 70.0",
        "inputs.sla.min_throughput_per_s: 240.0 -> not set",
    ]
