"""Every file the command line opens must be a regular file within its cap (issue 10, item 8).

`/dev/zero` as a packet, trace, hardware file, key, passphrase file or allowed signers file grew
the process to 5-24 GB; a FIFO as a packet, trace or key blocked forever. Each case runs the real
command in a subprocess with a 2 GiB address-space limit and a timeout, so a reader that still
reads without a cap fails fast (MemoryError, exit 3) and one that blocks fails on the timeout,
instead of taking the machine with it."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes

ADDRESS_SPACE = 2 << 30  # bytes: the commands need ~1 GiB of address space (numpy, numba)
TIMEOUT_S = 60  # a command starts in 1-3 s on the shared 2-core machine
REJECT = ("--decision", "reject")  # guards block approvals of the bare example


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [sys.executable, "-m", "workbench", *argv],
            cwd=cwd,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=TIMEOUT_S,
            preexec_fn=_limited,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"workbench {' '.join(argv)} blocked for {TIMEOUT_S} s")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A packet, one referring to a trace and one to a hardware file (both `{target}`), a FIFO,
    a plain key and a passphrase-protected key."""
    path = tmp_path_factory.mktemp("hostile")
    text = example_bytes(DEFAULT_EXAMPLE).decode()
    (path / "p.yaml").write_text(text)
    (path / "trace.yaml.in").write_text(
        text.replace(
            "      process: poisson\n      rate_per_s: 250.0\n",
            "      process: trace\n      trace: {target}\n",
        )
    )
    (path / "hw.yaml.in").write_text(text.replace("    preset: npu-8c\n", "    file: {target}\n"))
    os.mkfifo(path / "fifo")
    for name, passphrase in (("key", ""), ("enc", "s3cret")):
        made = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-a", "4", "-C", "t", "-f",
             str(path / name)],
            capture_output=True, check=False,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
    return path


def _packet_with(folder: Path, template: str, target: str) -> str:
    name = f"{template}-{Path(target).name}.yaml"
    text = (folder / f"{template}.yaml.in").read_text().replace("{target}", target)
    (folder / name).write_text(text)
    return name


TARGETS = {"/dev/zero": "a character device", "fifo": "a FIFO"}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "case",
    ["check", "trace", "hardware", "key", "passphrase", "allowed-signers"],
)
def test_a_device_or_fifo_is_refused_at_once(folder: Path, case: str, target: str) -> None:
    role = ("sign", "p.yaml", "--role", "ml-compiler-engineer", *REJECT)
    argv, code, field = {
        "check": (("check", target), 2, None),
        "trace": (("check", _packet_with(folder, "trace", target)), 1, "arrivals.trace"),
        "hardware": (("check", _packet_with(folder, "hw", target)), 1, "inputs.hardware.file"),
        "key": ((*role, "--key", target), 2, "cannot read key file"),
        "passphrase": ((*role, "--key", "enc", "--passphrase-file", target), 2, "passphrase"),
        "allowed-signers": (("verify", "p.yaml", "--allowed-signers", target), 2, "allowed"),
    }[case]
    before = (folder / "p.yaml").read_bytes()
    result = _cli(folder, *argv)
    err = (result.stdout + result.stderr).strip()
    assert result.returncode == code, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert target in err and f"is {TARGETS[target]}, not a regular file" in err, err
    assert field is None or field in err, err
    assert (folder / "p.yaml").read_bytes() == before  # nothing signed or written
