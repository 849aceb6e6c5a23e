"""The command line imports only the chosen command's module (issue 12, start-up CPU).

Each case runs the real `workbench.cli.main` in a fresh interpreter and reads `sys.modules`
after it: importing every command module at start-up pulled numba, polars and the signing code
into `workbench run` and `workbench check`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes, example_names
from workbench.cli import COMMANDS, command_module

REPO = Path(__file__).resolve().parents[2]

# main(argv), then the workbench.commands modules and heavy libraries that were imported.
PROBE = """
import contextlib, io, json, sys
from workbench.cli import main
listing = io.StringIO()
with contextlib.redirect_stdout(listing):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:  # --help
        code = exc.code
loaded = sorted(m for m in sys.modules if m.startswith("workbench.commands.")
                or m in ("numpy", "numba", "polars", "textual", "cryptography"))
print(json.dumps({"code": code, "loaded": loaded, "stdout": listing.getvalue()}))
"""


def probe(*argv: str, cwd: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=cwd, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("example", example_names())
def test_check_imports_its_own_module_only(tmp_path: Path, example: str) -> None:
    """The model's checks (hardware, block, fusion, tiles, the serving scheduler's placements and
    KV cache) use its numpy- and numba-free modules: checking a serving packet once imported
    numba, half of the command's time."""
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(example))
    out = probe("check", str(packet), cwd=tmp_path)
    assert out["code"] == 0
    assert out["loaded"] == ["workbench.commands.check"]


def test_schema_needs_no_arrays(tmp_path: Path) -> None:
    """The packet schema reads the GEMM libraries' names; numpy loads only where the model
    computes (model/compiler/library.py)."""
    out = probe("schema", cwd=tmp_path)
    assert out["code"] == 0
    assert out["loaded"] == ["workbench.commands.schema"]


def test_run_imports_its_module_and_what_it_renders_with(tmp_path: Path) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    out = probe("run", str(packet), "--requests", "2000", cwd=tmp_path)
    assert out["code"] == 0
    commands = [m for m in out["loaded"] if m.startswith("workbench.commands.")]
    assert commands == ["workbench.commands.render", "workbench.commands.run"]
    assert "textual" not in out["loaded"] and "cryptography" not in out["loaded"]


def test_help_lists_every_command_without_importing_any(tmp_path: Path) -> None:
    out = probe("--help", cwd=tmp_path)
    assert out["code"] == 0
    assert out["loaded"] == []
    listed = {line.split()[0] for line in out["stdout"].splitlines() if line.startswith("    ")}
    assert set(COMMANDS) <= listed


def test_chosen_command_still_parses_its_arguments(tmp_path: Path) -> None:
    out = probe("run", "--help", cwd=tmp_path)
    assert out["code"] == 0
    assert "--requests" in out["stdout"] and "--candidate" in out["stdout"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_table_help_is_the_modules_own(name: str) -> None:
    """The light table's help (shown by `workbench --help`) is what the module registers."""
    sub = argparse.ArgumentParser().add_subparsers()
    command_module(name).add_parser(sub)
    (action,) = (a for a in sub._choices_actions if a.dest == name)
    assert action.help == COMMANDS[name][1]
