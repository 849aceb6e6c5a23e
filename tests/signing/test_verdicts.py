"""Trustworthy verdicts (issue 10): nothing hides after the signatures whatever the line breaks,
`verify` exits 0 only for an approved packet by allowed keys, allowed signers come from the
command line or git, and one key signs for one owner.

Packets are signed with `packets.signoff.sign_packet` (the review guards that block approving
an example without outputs are the `sign` command's business, tested in test_cli.py); verify
runs through the real command line, allowed signers through real git and real files.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packets.errors import PacketError
from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.fingerprint import inputs_sha256
from packets.load import load_packet, parse_packet
from packets.signing.packet import sign_entry, tail_problems, verify_entries
from packets.signoff import owner_principals, sign_packet, verify_packet
from workbench.cli import main

from .conftest import TestKey
from .sample import BODY, NOW, OWNERS, PACKET_ID, SIGNED_AT, packet_with, sign_all

KINDS = ("ed25519", "ecdsa-p256", "rsa-3072")
# YAML's line breaks other than LF and CRLF, as UTF-8 bytes: CR, NEL, LS, PS.
ODD_BREAKS = {"CR": b"\r", "NEL": b"\xc2\x85", "LS": b"\xe2\x80\xa8", "PS": b"\xe2\x80\xa9"}


@pytest.fixture
def no_git_signers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in a folder outside any git repository, with empty global and no system git config,
    so git names no allowed signers file unless a test configures one."""
    (tmp_path / "gitconfig").write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def release_section(raw: bytes, recommendation: str) -> bytes:
    """An `outputs.release` section for the packet `raw`, current for its inputs."""
    digest = inputs_sha256(parse_packet(raw).packet)
    return (
        f"outputs:\n  release:\n    inputs_sha256: {digest}\n    recommendation: "
        f"{recommendation}\n    computed: {recommendation}\n    rule: the documented rule\n"
    ).encode()


def signed_example(
    folder: Path, keys: dict[str, TestKey], decisions: tuple[str, ...], body: bytes | None = None
) -> tuple[Path, Path]:
    """The default example (or `body`) signed by its first owners with the given decisions
    (one per owner, in order), each with its own key kind; and an allowed_signers file listing
    the three owners' keys."""
    packet = folder / "p.yaml"
    packet.write_bytes(body if body is not None else example_bytes(DEFAULT_EXAMPLE))
    owners = owner_principals(load_packet(packet))
    for role, kind, decision in zip(owners, KINDS, decisions, strict=False):  # the first few
        signed = sign_packet(load_packet(packet), role, keys[kind].private_key, decision=decision)
        packet.write_bytes(signed)
    allowed = folder / "allowed_signers"
    allowed.write_text(
        "".join(f"{p} {keys[k].public_line}\n" for p, k in zip(owners.values(), KINDS, strict=True))
    )
    return packet, allowed


def verify(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


# --- 1. nothing may follow the signature entries, whatever the line breaks -----------------------


@pytest.mark.parametrize("name", ODD_BREAKS)
def test_a_comment_cannot_carry_content_past_any_yaml_line_break(keys, name: str) -> None:
    data, entries = packet_with(BODY, sign_all(keys))
    attack = data + b"# reviewed" + ODD_BREAKS[name] + b"title: smuggled\n"
    problems = tail_problems(attack)
    assert any(f"a {name}" in p and "line break in the signatures section" in p for p in problems)
    assert any("text at column 0 follows the signature entries" in p for p in problems)
    assert not any("smuggled" in p for p in problems)  # the file's text is never echoed
    assert not verify_entries(attack, PACKET_ID, OWNERS, entries, now=NOW).ok
    # Line numbers are a YAML parser's: the comment is on the line after the entries, the
    # smuggled key on the next one.
    comment = data.count(b"\n") + 1
    assert problems[0].startswith(f"line {comment}: a {name}")
    assert problems[-1].startswith(f"line {comment + 1}: text at column 0")


def test_lf_and_crlf_comments_after_the_entries_are_fine(keys) -> None:
    data, _ = packet_with(BODY, sign_all(keys))
    assert tail_problems(data + b"# reviewed\n#  twice\n") == ()
    assert tail_problems(data.replace(b"\n", b"\r\n")) == ()


def smuggle(raw: bytes, section: bytes, brk: bytes = b"\r") -> bytes:
    """The issue's attack: `section` appended after the entries inside one `#` comment whose
    lines are joined by `brk` (YAML reads them as lines; a check splitting on LF does not)."""
    return raw + b"# reviewed" + brk + section.rstrip(b"\n").replace(b"\n", brk) + b"\n"


@pytest.mark.parametrize("name", ODD_BREAKS)
def test_a_smuggled_section_fails_verification_even_past_the_loader(
    tmp_path: Path, keys, no_git_signers, name: str
) -> None:
    packet, _ = signed_example(tmp_path, keys, ("reject",) * 3)
    loaded = load_packet(packet)
    attack = smuggle(loaded.raw, release_section(loaded.raw, "ship"), ODD_BREAKS[name])
    # Bypass whatever the loader refuses: the loaded packet with the attack's bytes.
    report = verify_packet(dataclasses.replace(loaded, raw=attack, yaml=None))
    # The section's own parse refuses the odd break, so no entry is read from it: nothing that
    # follows the entries can be read as part of the signed packet.
    assert "valid" not in {r.status for r in report.roles}
    assert not report.ok and report.failures(signatures_only=True)
    assert any("the signatures section" in p for p in report.problems)


def test_verify_refuses_the_issues_packet(tmp_path: Path, keys, no_git_signers, capsys) -> None:
    packet, allowed = signed_example(tmp_path, keys, ("reject",) * 3)
    raw = packet.read_bytes()
    packet.write_bytes(smuggle(raw, release_section(raw, "ship")))
    for extra in ([], ["--signatures-only"]):
        code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed), *extra)
        assert code != 0 and "verified\n" not in out.replace("NOT verified", "")
        assert "recommendation: ship" not in out


@pytest.fixture(scope="module")
def rejected(tmp_path_factory: pytest.TempPathFactory, keys) -> bytes:
    """The default example's bytes, signed `reject` by its three owners."""
    packet, _ = signed_example(tmp_path_factory.mktemp("rejected"), keys, ("reject",) * 3)
    return packet.read_bytes()


_PIECES = ["\r", "\n", "\r\n", "\x85", "\u2028", "\u2029", "#", " ", "-", ": ", "title", "x"]
_PIECES += ["outputs:", "  release:", "{", "}", "[", "]", "'", '"', "|", "---", "..."]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join))
def test_whatever_follows_the_entries_verifies_only_if_it_changes_nothing(
    rejected: bytes, extra: str
) -> None:
    """Soundness: bytes appended after the signature entries either fail to load, fail
    verification, or leave the packet exactly as signed."""
    original = parse_packet(rejected).packet
    try:
        attacked = parse_packet(rejected + extra.encode())
    except PacketError:
        return
    if not verify_packet(attacked).failures(signatures_only=True):
        assert attacked.packet == original


# --- 2. the verdict: every owner signed, validly, with an allowed key, and none rejected ----------


def test_a_packet_every_owner_rejected_does_not_verify(
    tmp_path: Path, keys, no_git_signers, capsys
) -> None:
    packet, allowed = signed_example(tmp_path, keys, ("reject",) * 3)
    code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed))
    assert code == 1
    assert [line.split()[2] for line in out.splitlines()[:3]] == ["reject"] * 3  # decisions
    assert "release recommendation: none recorded" in out
    verdict = out.splitlines()[-1]
    assert verdict.startswith("NOT verified: ") and verdict.count(" rejected") == 3
    code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed), "--signatures-only")
    assert code == 0 and out.splitlines()[-1] == "verified (signatures only)"


def test_an_approved_packet_verifies_and_shows_its_recommendation(
    tmp_path: Path, keys, no_git_signers, capsys
) -> None:
    raw = example_bytes(DEFAULT_EXAMPLE)
    body = raw + release_section(raw, "ship-guarded")
    decisions = ("approve", "approve-with-guards", "approve")
    packet, allowed = signed_example(tmp_path, keys, decisions, body)
    code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed))
    assert code == 0 and out.splitlines()[-1] == "verified", out
    assert [line.split()[1:3] for line in out.splitlines()[:3]] == [["valid", d] for d in decisions]
    assert "release recommendation: ship-guarded" in out
    # One owner re-signs rejecting: the same packet no longer verifies, and says who.
    owners = list(owner_principals(load_packet(packet)))
    packet.write_bytes(
        sign_packet(load_packet(packet), owners[1], keys[KINDS[1]].private_key, decision="reject")
    )
    code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed))
    assert code == 1 and f"NOT verified: {owners[1]}: kenji.sato@example.com rejected" in out


def test_a_missing_signature_does_not_verify_even_signatures_only(
    tmp_path: Path, keys, no_git_signers, capsys
) -> None:
    packet, allowed = signed_example(tmp_path, keys, ("approve",) * 2)
    owners = list(owner_principals(load_packet(packet)))
    for extra in ([], ["--signatures-only"]):
        code, out = verify(capsys, str(packet), "--allowed-signers", str(allowed), *extra)
        assert code == 1 and f"{owners[2]}: missing" in out.splitlines()[-1]


# --- 3. allowed signers: the option, else git's setting, else not verified ------------------------


def test_without_allowed_signers_identity_is_not_checked(
    tmp_path: Path, keys, no_git_signers, capsys
) -> None:
    packet, _ = signed_example(tmp_path, keys, ("approve",) * 3)
    code, out = verify(capsys, str(packet))
    assert code == 1
    assert out.splitlines()[-1] == "NOT verified: identity not checked: no allowed signers"
    code, out = verify(capsys, str(packet), "--signatures-only")
    assert code == 0 and "identity not checked" in out


def git(*args: str, cwd: Path) -> None:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_git_config_names_the_allowed_signers_file(
    tmp_path: Path, keys, no_git_signers, capsys, monkeypatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "packets").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    _, allowed = signed_example(repo / "packets", keys, ("approve",) * 3)
    # Relative to the repository's top folder, as git reads it; run from a subfolder.
    git("config", "gpg.ssh.allowedSignersFile", "packets/allowed_signers", cwd=repo)
    monkeypatch.chdir(repo / "packets")
    code, out = verify(capsys, "p.yaml")
    assert code == 0 and out.splitlines()[-1] == "verified", out
    assert f"allowed signers: {allowed} (from git config" in out  # ~ expanded as git does
    named = next(line for line in out.splitlines() if line.startswith("allowed signers: "))
    assert named.endswith(" (from git config gpg.ssh.allowedSignersFile)")
    assert Path(named.split(": ", 1)[1].rsplit(" (", 1)[0]).resolve() == allowed.resolve()
    # The file git names is the one used: swap two owners' keys in it and both fail.
    lines = allowed.read_text().splitlines()
    a, b = lines[0].split(" ", 1), lines[1].split(" ", 1)
    allowed.write_text(f"{a[0]} {b[1]}\n{b[0]} {a[1]}\n{lines[2]}\n")
    code, out = verify(capsys, "p.yaml")
    assert code == 1 and out.splitlines()[-1].count(": not-allowed") == 2
    # --allowed-signers wins over git's setting.
    good = tmp_path / "good_signers"
    good.write_text(f"{a[0]} {a[1]}\n{b[0]} {b[1]}\n{lines[2]}\n")
    assert verify(capsys, "p.yaml", "--allowed-signers", str(good))[0] == 0
    # A configured file that cannot be read stops the command (exit 2), naming where from.
    allowed.unlink()
    code, out = verify(capsys, "p.yaml")
    assert code == 2 and "named by git config gpg.ssh.allowedSignersFile" in out


# --- 4. one key, one owner --------------------------------------------------------------------


def test_one_key_cannot_sign_two_owners_roles(tmp_path: Path, keys, no_git_signers, capsys) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    first, second, _ = owner_principals(load_packet(packet))
    key = str(keys["ed25519"].path)
    sign = ["sign", str(packet), "--key", key, "--decision", "reject"]
    assert main([*sign, "--role", first]) == 0
    before = packet.read_bytes()
    capsys.readouterr()
    assert main([*sign, "--role", second]) == 2
    err = capsys.readouterr().err
    assert f"already signs role '{first}'" in err and f"cannot sign role '{second}'" in err
    assert packet.read_bytes() == before  # nothing written
    assert main([*sign, "--role", first]) == 0  # re-signing its own role is fine


def test_one_key_may_sign_two_roles_of_one_principal(tmp_path: Path, keys) -> None:
    raw = example_bytes(DEFAULT_EXAMPLE)
    loaded = parse_packet(raw)
    principals = list(owner_principals(loaded).values())
    same = raw.replace(principals[1].encode(), principals[0].encode())  # a warning, not an error
    loaded = parse_packet(same)
    roles = list(owner_principals(loaded))
    key = keys["ed25519"].private_key
    signed = parse_packet(sign_packet(loaded, roles[0], key, decision="reject"))
    signed = parse_packet(sign_packet(signed, roles[1], key, decision="reject"))
    report = verify_packet(signed)
    assert [r.status for r in report.roles] == ["valid", "valid", "missing"]
    assert not any("one key, one owner" in p for p in report.problems)


def test_verify_flags_one_key_signing_for_two_owners(keys) -> None:
    """Entries made without the workbench's refusal still fail verification."""
    key = keys["ed25519"].private_key
    entries = [
        sign_entry(BODY, PACKET_ID, role, principal, "approve", key, SIGNED_AT)
        for role, principal in OWNERS.items()
    ]
    data, parsed = packet_with(BODY, entries)
    report = verify_entries(data, PACKET_ID, OWNERS, parsed, now=NOW)
    assert [r.status for r in report.roles] == ["valid"] * 3 and not report.ok
    assert report.problems[0].startswith("roles perf-owner and compiler are signed by the same key")
    assert len(report.problems) == 3  # every pair of the three roles


def test_what_the_loader_read_must_be_the_signed_body(tmp_path: Path, keys, no_git_signers) -> None:
    """The last line of defence on its own: bytes that pass every layout check, but a packet
    (as some loader read it) that says more than they do, fails."""
    packet, _ = signed_example(tmp_path, keys, ("approve",) * 3)
    signed = load_packet(packet)
    assert verify_packet(signed).problems == ()
    raw = example_bytes(DEFAULT_EXAMPLE)
    shipped = parse_packet(raw + release_section(raw, "ship"))
    claimed = dataclasses.replace(signed, packet=shipped.packet.model_copy(
        update={"signatures": signed.packet.signatures}))  # fmt: skip
    report = verify_packet(claimed)
    assert report.problems == (
        "the packet as loaded is not its body plus its signatures: content outside the signed "
        "body is read as part of the packet",
    )
    assert [r.status for r in report.roles] == ["valid"] * 3 and not report.ok


def test_an_unsigned_packet_only_lacks_signatures(no_git_signers) -> None:
    report = verify_packet(parse_packet(example_bytes(DEFAULT_EXAMPLE)))
    assert report.problems == () and {r.status for r in report.roles} == {"missing"}


def test_git_global_config_with_a_home_relative_path(
    tmp_path: Path, keys, no_git_signers, capsys, monkeypatch
) -> None:
    _, allowed = signed_example(tmp_path, keys, ("approve",) * 3)
    monkeypatch.setenv("HOME", str(tmp_path))
    git("config", "--global", "gpg.ssh.allowedSignersFile", "~/allowed_signers", cwd=tmp_path)
    assert "allowedSignersFile = ~/allowed_signers" in (tmp_path / "gitconfig").read_text()
    code, out = verify(capsys, "p.yaml")
    assert code == 0 and out.splitlines()[-1] == "verified", out
    assert f"allowed signers: {allowed} (from git config" in out  # ~ expanded as git does
