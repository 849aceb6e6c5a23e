"""packets.files: bounded reads of regular files only, and locked writes that keep the file's
mode, group and symlinks and clear a killed writer's temp files (issue 10, items 6 and 8).

Everything here runs on real files; hostile inputs that would hang or exhaust memory on a
reader without these checks (FIFOs, /dev/zero) are in tests/cli/test_hostile_files.py, run in
subprocesses with a memory limit and a timeout."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from packets.errors import UsageError
from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.files import (
    PACKET,
    FileKind,
    FileRefused,
    FileTooLarge,
    atomic_write,
    locked,
    locked_update,
    read_regular,
    sanitized_token,
)
from packets.signing.keyfiles import load_private_key
from packets.signing.ssherrors import KeyLoadError
from triage.review.exporting import write_export
from workbench.cli import main
from workbench.core import drafts
from workbench.core.session import open_working, save_packet

SECRET = "hunter2-do-not-print"


@pytest.fixture
def packet(tmp_path: Path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    return path


def _artifact(path: Path | str, ref: str = "reports/closure.md") -> int:
    return main(["artifact", str(path), "--role", "runtime-systems-engineer", "--ref", ref])


# --- reading --------------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_a_proc_file_is_read_up_to_the_cap_whatever_its_size_says(tmp_path: Path) -> None:
    assert os.stat("/proc/self/maps").st_size == 0  # /proc reports no size
    small = FileKind("test file", 64)
    with pytest.raises(FileTooLarge, match="capped at"):
        read_regular("/proc/self/maps", small)
    assert read_regular("/proc/self/maps", FileKind("test file", 1 << 24)).count(b"\n") > 1


def test_a_regular_file_over_its_cap_is_refused_by_size_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big"
    with big.open("wb") as handle:  # sparse: 2 GiB of nothing, never read
        handle.truncate(2 << 30)
    with pytest.raises(FileTooLarge, match=r"2048\.0 MiB; packet files are capped at 1 MiB"):
        read_regular(big, PACKET)


def test_a_key_file_over_its_cap_is_a_key_error_naming_the_file(tmp_path: Path) -> None:
    key = tmp_path / "id_big"
    key.write_bytes(b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + b"A" * (70 * 1024))
    with pytest.raises(KeyLoadError, match=r"id_big: cannot read key file: .*capped at 64 KiB"):
        load_private_key(key)


def test_a_directory_or_missing_file_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="is a directory, not a regular file"):
        read_regular(tmp_path, PACKET)
    with pytest.raises(FileRefused, match="No such file") as info:
        read_regular(tmp_path / "none", PACKET)
    assert info.value.error_number == 2


def test_a_trace_pointing_at_a_text_file_never_prints_its_content(
    packet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`trace: ../../etc/passwd` printed the file's first line; /proc/self/environ leaked."""
    (tmp_path / "passwd").write_text(f"root:x:0:0:{SECRET}:/root:/bin/bash\n")
    (tmp_path / "environ").write_bytes(f"API_KEY={SECRET}\0HOME=/root\0".encode())
    original = packet.read_text()
    for target in ("passwd", "environ"):
        text = original.replace(
            "      process: poisson\n      rate_per_s: 250.0\n",
            f"      process: trace\n      trace: {target}\n",
        )
        packet.write_text(text)
        assert main(["check", str(packet)]) == 1
        err = capsys.readouterr()
        assert "inputs.workload.arrivals.trace" in err.out and target in err.out
        assert SECRET not in err.out + err.err and "root:x" not in err.out


def test_a_hardware_file_format_is_quoted_only_as_a_short_token(
    packet: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "hw.yaml").write_text(f"format: 'token {SECRET} {SECRET}'\n")
    packet.write_text(packet.read_text().replace("    preset: npu-8c\n", "    file: hw.yaml\n"))
    assert main(["check", str(packet)]) == 1
    out = capsys.readouterr().out
    assert "expected format handoff-hardware/1" in out and SECRET not in out
    assert sanitized_token("a b\nc" * 20) == repr(("a?b?c" * 20)[:21] + "...")


def _returns_without_blocking(call: Callable[[], object], fifo: Path) -> object:
    """`call()`'s result or exception; fails if it blocks on the FIFO (then unblocks it by
    opening the FIFO's write end, so the test's thread can finish)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for the blocked reader
        thread.join(10)
        pytest.fail(f"blocked on the FIFO {fifo}")
    return outcome[0]


def test_a_fifo_as_a_draft_is_reported_not_read(packet: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    folder.mkdir()
    fifo = drafts.draft_path(packet, folder)
    os.mkfifo(fifo)
    result = _returns_without_blocking(lambda: drafts.read_draft(packet, folder), fifo)
    assert isinstance(result, UsageError) and "is a FIFO, not a regular file" in str(result)
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # left alone


def test_a_fifo_as_the_export_target_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    result = _returns_without_blocking(
        lambda: write_export(b"x: 1\n", fifo, source=None, force=True), fifo
    )
    assert isinstance(result, UsageError) and "is a FIFO, not a regular file" in str(result)
    assert not (tmp_path / "out.yaml.bak").exists()


# A child that forces an export over OUT while the kernel refuses any write past LIMIT bytes
# (RLIMIT_FSIZE; SIGXFSZ ignored, so the write fails with EFBIG instead of killing the child):
# the backup of an OUT larger than LIMIT fails part-way through, as a full disk would.
_BACKUP_CHILD = """
import resource, signal, sys
from pathlib import Path
from packets.errors import UsageError
from triage.review.exporting import write_export
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
try:
    write_export(b"x: 1\\n", Path(sys.argv[1]), source=None, force=True)
except UsageError as exc:
    print(exc)
    sys.exit(2)
"""


def test_a_backup_that_fails_part_way_leaves_no_partial_bak_and_out_unchanged(
    tmp_path: Path,
) -> None:
    """`OUT.bak` is written atomically: a failure in the middle of copying OUT (here: the
    file-size limit, as a full disk) leaves an older backup as it was, no partial or temp file
    beside it, and OUT unchanged. (A plain copy left the first LIMIT bytes as OUT.bak.)"""
    import subprocess
    import sys

    out = tmp_path / "out.yaml"
    original = b"".join(b"line %06d of the exported packet\n" % i for i in range(20_000))
    out.write_bytes(original)  # ~660 KB, far past the limit below
    older = b"an older backup\n"
    (tmp_path / "out.yaml.bak").write_bytes(older)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _BACKUP_CHILD, str(out), "65536"],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert (tmp_path / "out.yaml.bak").read_bytes() == older
    assert out.read_bytes() == original
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml", "out.yaml.bak"]
    assert "cannot keep a backup, nothing written" in done.stdout
    assert "out.yaml.bak" in done.stdout and "File too large" in done.stdout


def test_a_forced_export_keeps_the_old_file_as_its_backup_atomically(tmp_path: Path) -> None:
    """The backup holds OUT's old bytes and mode, and no temp file is left beside it."""
    out = tmp_path / "out.yaml"
    out.write_bytes(b"old: 1\n")
    out.chmod(0o600)
    backup = write_export(b"new: 2\n", out, source=None, force=True)
    assert backup == tmp_path / "out.yaml.bak"
    assert backup.read_bytes() == b"old: 1\n" and out.read_bytes() == b"new: 2\n"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml", "out.yaml.bak"]


# --- writing: mode, group, symlinks, stale temps ---------------------------------------------


def test_a_write_keeps_the_file_mode(packet: Path) -> None:
    packet.chmod(0o600)
    assert _artifact(packet) == 0
    assert stat.S_IMODE(packet.stat().st_mode) == 0o600
    assert b"reports/closure.md" in packet.read_bytes()


def test_a_write_keeps_the_file_group(packet: Path) -> None:
    if os.geteuid() == 0:
        group = 65534 if os.getegid() != 65534 else 1  # root may give a file any group
    else:
        others = [g for g in os.getgroups() if g != os.getegid()]
        if not others:
            pytest.skip("this user belongs to no second group to give the file")
        group = others[0]
    os.chown(packet, -1, group)
    packet.chmod(0o640)
    assert _artifact(packet) == 0
    assert packet.stat().st_gid == group and stat.S_IMODE(packet.stat().st_mode) == 0o640


def test_a_symlinked_packet_is_written_through_to_its_target(packet: Path, tmp_path: Path) -> None:
    link = tmp_path / "sub" / "link.yaml"
    link.parent.mkdir()
    link.symlink_to(packet)
    assert _artifact(link) == 0
    assert link.is_symlink() and os.readlink(link) == str(packet)
    assert b"reports/closure.md" in packet.read_bytes()
    assert not list(link.parent.glob(".*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_killed_writers_temp_files_are_removed_on_the_next_write(packet: Path) -> None:
    folder = packet.parent
    stale = folder / ".p.yaml.k3x9_q2a.tmp"  # the name mkstemp gives: 8 characters
    stale.write_bytes(b"half a packet")
    past = time.time() - 60
    os.utime(stale, (past, past))
    keep = [folder / ".p.yaml.notes.tmp", folder / ".q.yaml.k3x9_q2a.tmp", folder / "p.yaml.tmp"]
    for other in keep:
        other.write_bytes(b"not ours")
        os.utime(other, (past, past))
    atomic_write(packet, example_bytes(DEFAULT_EXAMPLE))
    assert not stale.exists()
    assert all(other.exists() for other in keep)


def test_a_fifo_in_the_packets_place_is_refused_for_writing(tmp_path: Path) -> None:
    fifo = tmp_path / "p.yaml"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="is a FIFO, not a regular file"):
        atomic_write(fifo, b"x: 1\n")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


# --- writing: the lock ----------------------------------------------------------------------


def test_the_lock_follows_the_file_when_a_writer_replaced_it_meanwhile(tmp_path: Path) -> None:
    """A writer that opened the old inode before a rename re-locks the new one and reads it."""
    path = tmp_path / "f"
    path.write_bytes(b"one")
    with locked(path) as first:
        assert first.read(PACKET) == b"one"
        first.write(b"two")
    assert locked_update(path, lambda current: (current or b"") + b"+three") == b"two+three"
    assert path.read_bytes() == b"two+three"


def test_a_refusing_update_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"kept")

    def refuse(current: bytes | None) -> bytes:
        raise FileRefused(str(path), "refused by the test")

    with pytest.raises(FileRefused):
        locked_update(path, refuse)
    assert path.read_bytes() == b"kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_saving_refuses_to_overwrite_a_file_changed_since_it_was_opened(packet: Path) -> None:
    from packets.load import load_packet

    working = open_working(load_packet(packet), packet)
    other = packet.read_bytes().replace(b"title: ", b"title: Changed by another writer - ", 1)
    packet.write_bytes(other)
    with pytest.raises(Exception, match="changed on disk since it was opened"):
        save_packet(working)
    assert packet.read_bytes() == other
    import hashlib

    save_packet(working, overwrite_sha256=hashlib.sha256(other).hexdigest())  # confirmed
    assert packet.read_bytes() != other


def test_outputs_computed_from_an_older_file_are_refused_not_written_over_it(
    packet: Path,
) -> None:
    from packets.load import load_packet
    from triage.review.writing import write_packet

    loaded = load_packet(packet)
    other = packet.read_bytes().replace(b"title: ", b"title: Edited meanwhile - ", 1)
    packet.write_bytes(other)
    mine = loaded.packet.model_copy(update={"title": "Mine"})
    with pytest.raises(UsageError, match="changed on disk while validating"):
        write_packet(loaded, mine, doing="validating")
    assert packet.read_bytes() == other


def test_outputs_written_after_another_owner_signed_keep_the_signature(
    packet: Path, tmp_path: Path
) -> None:
    import subprocess

    from packets.load import load_packet
    from triage.review.writing import write_packet

    key = tmp_path / "id"
    made = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", str(key)],
        capture_output=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    loaded = load_packet(packet)
    sign = ["sign", str(packet), "--role", "ml-compiler-engineer", "--key", str(key)]
    assert main([*sign, "--decision", "reject"]) == 0  # another owner, after our read
    write_packet(loaded, loaded.packet.model_copy(update={"title": "Mine"}))
    final = load_packet(packet)
    assert final.packet.title == "Mine"
    assert [s.role for s in final.packet.signatures] == ["ml-compiler-engineer"]  # kept (stale)
