"""Every benchmark script reads its command line before it measures anything.

A benchmark runs for minutes and rewrites its section of BENCHMARKS.md. Scripts that read
`sys.argv` by hand ran in full for any argument they did not know (`--help`, a typo), so
here each script's `cli` must print its help, refuse an unknown argument with status 2, and
in both cases leave BENCHMARKS.md as it was.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from benchmarks.report import BENCHMARKS_MD

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(
    p.stem
    for p in BENCHMARKS.glob("*.py")
    if any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        for node in ast.parse(p.read_text(encoding="utf-8")).body
    )
)


def test_the_scripts_are_found() -> None:
    assert {"bench_app", "bench_runtime", "run_all"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_script_runs_its_cli_and_nothing_else(name: str) -> None:
    """The `if __name__ == "__main__":` block is exactly `cli()`: the parsed command line."""
    tree = ast.parse((BENCHMARKS / f"{name}.py").read_text(encoding="utf-8"))
    guard = next(
        n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)
    )
    assert [ast.unparse(s) for s in guard.body] == ["cli()"]


@pytest.mark.parametrize("name", SCRIPTS)
def test_help_and_unknown_arguments_run_nothing(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cli = importlib.import_module(f"benchmarks.{name}").cli
    before = BENCHMARKS_MD.stat().st_mtime_ns
    with pytest.raises(SystemExit) as helped:
        cli(["--help"])
    assert helped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m benchmarks.{name}")
    with pytest.raises(SystemExit) as refused:
        cli(["--no-such-option"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --no-such-option" in err
    assert BENCHMARKS_MD.stat().st_mtime_ns == before


def test_bench_runtime_compare_needs_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.bench_runtime import cli

    with pytest.raises(SystemExit) as refused:
        cli(["--compare", "HEAD"])
    assert refused.value.code == 2
    assert "--compare goes with `summary`" in capsys.readouterr().err
