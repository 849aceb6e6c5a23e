"""The review steps' textual-free rules: output freshness, done-predicates, trigger defaults,
artifact edits, signatures on the current bytes, signing and export from a working packet."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packets.dump import dump_packet
from packets.errors import UsageError
from packets.load import load_packet
from packets.signing.keyfiles import load_private_key
from packets.signoff import sign_packet, verify_packet
from tests.review.conftest import prepared_copy, proposed  # noqa: F401 (module-scoped fixture)
from tests.signing.conftest import ssh_keygen_generate
from triage.review.exporting import SignedTargetError
from triage.review.triggers import default_triggers
from triage.review.writing import with_outputs
from workbench.core.session import WorkingPacket, apply_edit, set_pending
from workbench.core.steps import Progress
from workbench.review.signing_flow import KeyChoice, export_working, load_signer, sign_working
from workbench.review.state import (
    artifact_edit,
    current_bytes,
    matrix_done,
    matrix_state,
    proposal_done,
    proposal_state,
    release_done,
    release_state,
    signature_report,
    signed_done,
    triggers_after,
)

from .conftest import working_for

PASSPHRASE = "open sesame"
ROLES = ("compiler-lead", "runtime-lead", "observability-engineer")


@pytest.fixture(scope="module")
def key_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """An unencrypted and an encrypted Ed25519 key made by ssh-keygen."""
    folder = tmp_path_factory.mktemp("state-keys")
    plain = ssh_keygen_generate(folder / "plain", ["-t", "ed25519"])
    locked = ssh_keygen_generate(folder / "locked", ["-t", "ed25519"], PASSPHRASE)
    return plain, locked


@pytest.fixture
def reviewed(proposed: Path, tmp_path: Path) -> Path:  # noqa: F811 (the imported fixture)
    """A copy of the proposed mapping packet with every owner's artifact recorded."""
    path = tmp_path / "p.yaml"
    shutil.copy(proposed, path)
    working = working_for(path)
    for index in range(len(working.packet.owners)):
        edited = apply_edit(working, ("owners", index, "artifact"), {"ref": f"docs/{index}.md"})
        assert isinstance(edited, WorkingPacket)
        working = edited
    path.write_bytes(dump_packet(working.packet))
    return path


def edited(working: WorkingPacket, path: tuple[str | int, ...], value: object) -> WorkingPacket:
    result = apply_edit(working, path, value)
    assert isinstance(result, WorkingPacket), result
    return result


def test_outputs_are_missing_then_current_then_stale_after_an_input_edit(
    proposed: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    fresh = working_for(prepared_copy(tmp_path))
    assert [s(fresh.packet).status for s in (proposal_state, matrix_state, release_state)] == [
        "missing"
    ] * 3
    working = working_for(proposed)
    progress = Progress(working, frozenset())
    assert proposal_done(progress) and matrix_done(progress) and release_done(progress)
    changed = edited(working, ("inputs", "sla", "p95_ms"), 950.0)
    states = [s(changed.packet) for s in (proposal_state, matrix_state, release_state)]
    assert [s.status for s in states] == ["stale"] * 3
    assert states[0].detail == "classification and mitigation computed from older inputs"
    progress = Progress(changed, frozenset())
    assert not (proposal_done(progress) or matrix_done(progress) or release_done(progress))


def test_a_matrix_for_another_candidate_and_a_release_the_rule_no_longer_gives_are_stale(
    proposed: Path,  # noqa: F811
) -> None:
    packet = load_packet(proposed).packet
    out = packet.outputs
    other = with_outputs(packet, mitigation=out.mitigation.model_copy(update={"candidate": "x"}))
    assert matrix_state(other).detail == "matrix for 'add-4096-bucket', the proposal is 'x'"
    decided = out.release.computed
    flipped = "hold" if decided != "hold" else "ship"
    moved = with_outputs(packet, release=out.release.model_copy(update={"computed": flipped}))
    assert release_state(moved).status == "stale"
    assert release_state(moved).detail == f"the rule now gives {decided}: recommend again"
    bare = edited(working_for(proposed), ("outputs", "rollback_triggers"), [])
    assert matrix_state(bare.packet).current and not matrix_done(Progress(bare, frozenset()))


def test_triggers_follow_a_new_matrix_unless_a_reviewer_edited_them(
    proposed: Path,  # noqa: F811
) -> None:
    packet = load_packet(proposed).packet
    matrix = packet.outputs.validation_matrix
    cells = [c.model_copy(update={"p99_ms": c.p99_ms * 0.5}) for c in matrix.cells]
    new = matrix.model_copy(update={"cells": cells})
    triggers, replaced = triggers_after(packet, new)
    assert (
        replaced and triggers == default_triggers(packet, new) != packet.outputs.rollback_triggers
    )
    mine = [
        t.model_copy(update={"threshold": t.threshold + 1})
        for t in packet.outputs.rollback_triggers
    ]
    kept, replaced = triggers_after(with_outputs(packet, rollback_triggers=mine), new)
    assert not replaced and kept == mine
    none, replaced = triggers_after(with_outputs(packet, rollback_triggers=[]), new)
    assert replaced and none == default_triggers(packet, new)


def test_artifact_edits_create_change_and_remove_an_artifact(proposed: Path) -> None:  # noqa: F811
    packet = load_packet(proposed).packet
    assert packet.owners[1].artifact is None and packet.owners[0].artifact is not None
    assert artifact_edit(packet, 1, "ref", "t.json") == (
        ("owners", 1, "artifact"),
        {"ref": "t.json"},
    )
    assert artifact_edit(packet, 1, "summary", "x") == "record the artifact's ref first"
    assert artifact_edit(packet, 0, "ref", "y.md") == (("owners", 0, "artifact", "ref"), "y.md")
    assert artifact_edit(packet, 0, "ref", None) == (("owners", 0, "artifact"), None)
    assert artifact_edit(packet, 0, "summary", None) == (("owners", 0, "artifact", "summary"), None)


def test_signatures_are_checked_on_the_file_bytes_until_an_edit_makes_them_stale(
    reviewed: Path, tmp_path: Path
) -> None:
    reviewed.write_bytes(b"# a comment the signature covers\n" + reviewed.read_bytes())
    for index, role in enumerate(ROLES):  # one key per owner: a key signs for one owner only
        signer = load_private_key(ssh_keygen_generate(tmp_path / f"k{index}", ["-t", "ed25519"]))
        loaded = load_packet(reviewed)
        reviewed.write_bytes(sign_packet(loaded, role, signer))
    working = working_for(reviewed)
    assert current_bytes(working) == reviewed.read_bytes()  # comments and all
    assert signature_report(working).ok and signed_done(Progress(working, frozenset()))
    changed = edited(working, ("owners", 1, "artifact", "summary"), "later")
    assert current_bytes(changed) == dump_packet(changed.packet)
    assert {r.status for r in signature_report(changed).roles} == {"stale"}
    assert not signed_done(Progress(changed, frozenset()))


def test_signing_saves_unsaved_edits_first_then_signs_the_saved_bytes(
    reviewed: Path, key_files: tuple[Path, Path]
) -> None:
    working = edited(working_for(reviewed), ("owners", 2, "artifact", "summary"), "closed")
    working = set_pending(working, ("inputs", "sla", "p95_ms"), "9O")
    signer = load_signer(KeyChoice(key_files[1], PASSPHRASE))
    after = sign_working(working, ROLES[0], signer)
    on_disk = load_packet(reviewed)
    assert on_disk.packet.owners[2].artifact.summary == "closed"  # the edit was saved first
    assert [r.status for r in verify_packet(on_disk).roles] == ["valid", "missing", "missing"]
    assert not after.dirty and after.packet == on_disk.packet
    assert dict(after.pending) == {"inputs.sla.p95_ms": "9O"}  # typed text is not lost
    assert signature_report(after).roles[0].status == "valid"


def test_the_app_refuses_one_key_for_two_owners(
    reviewed: Path, key_files: tuple[Path, Path]
) -> None:
    signer = load_signer(KeyChoice(key_files[0]))
    after = sign_working(working_for(reviewed), ROLES[0], signer)
    signed = reviewed.read_bytes()
    with pytest.raises(UsageError, match=f"already signs role '{ROLES[0]}'.*'{ROLES[1]}'"):
        sign_working(after, ROLES[1], signer)
    assert reviewed.read_bytes() == signed  # nothing written


def test_signing_is_refused_while_guards_block_or_the_file_changed(
    proposed: Path,  # noqa: F811
    reviewed: Path,
    key_files: tuple[Path, Path],
) -> None:
    signer = load_signer(KeyChoice(key_files[0]))
    with pytest.raises(UsageError, match=r"review guards block \(artifacts\)"):
        sign_working(working_for(proposed), ROLES[0], signer)
    working = working_for(reviewed)
    reviewed.write_bytes(reviewed.read_bytes() + b"# edited elsewhere\n")
    with pytest.raises(UsageError, match="changed on disk since it was opened"):
        sign_working(working, ROLES[0], signer)


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        (KeyChoice(None), "give the private key's path"),
        (KeyChoice(Path("missing-key")), "cannot read key file"),
        ("locked", "the key is encrypted: type its passphrase"),
        ("wrong", "wrong passphrase"),
    ],
)
def test_unusable_keys_are_one_line_refusals(
    key_files: tuple[Path, Path], choice: object, message: str
) -> None:
    if choice == "locked":
        choice = KeyChoice(key_files[1])
    elif choice == "wrong":
        choice = KeyChoice(key_files[1], "not it")
    with pytest.raises(UsageError, match=message) as raised:
        load_signer(choice)  # type: ignore[arg-type]
    assert "\n" not in str(raised.value) and PASSPHRASE not in str(raised.value)


def test_export_from_the_app_follows_the_export_rules(
    proposed: Path,  # noqa: F811
    reviewed: Path,
    key_files: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    out = tmp_path / "out.yaml"
    with pytest.raises(UsageError, match="export refused: review guards block"):
        export_working(working_for(proposed), out, "yaml")
    working = working_for(reviewed)
    with pytest.raises(UsageError, match="different file than the packet"):
        export_working(working, reviewed, "yaml")
    assert export_working(working, out, "yaml") is None
    assert out.read_bytes() == reviewed.read_bytes()
    signed = sign_packet(load_packet(reviewed), ROLES[0], load_private_key(key_files[0]))
    out.write_bytes(signed)
    with pytest.raises(SignedTargetError):
        export_working(working, out, "yaml")
    assert out.read_bytes() == signed
    backup = export_working(working, out, "markdown", force=True)
    assert backup == tmp_path / "out.yaml.bak" and backup.read_bytes() == signed
    assert out.read_text().startswith("# ") and "## Signatures" in out.read_text()
    dirty = edited(working, ("owners", 0, "artifact", "summary"), "unsaved")
    export_working(dirty, tmp_path / "dirty.yaml", "yaml")
    assert (tmp_path / "dirty.yaml").read_bytes() == dump_packet(dirty.packet)
