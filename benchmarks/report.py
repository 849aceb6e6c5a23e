"""Write one benchmark's figures into its own section of BENCHMARKS.md.

Each benchmark script owns the section between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`
and replaces only that, so scripts can run alone or together and never clobber each other.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS_MD = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
HEADER = (
    "# Benchmarks\n\n"
    "Measured figures, each section written by the script named in it. Speed targets live here,\n"
    "never as wall-clock asserts in tests. Re-run one with the command shown, or all with\n"
    "`make bench`.\n"
)


def argument_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The command line of the benchmark `module` (e.g. "benchmarks.bench_app"), described by
    its docstring `doc`: `--help` prints that, and an argument the script does not take exits
    with status 2 and a one-line usage error before anything runs. (Scripts that read
    `sys.argv` by hand ran the whole benchmark, minutes, for any argument they did not know,
    `--help` or a typo included, and rewrote their section of BENCHMARKS.md with it.)"""
    return argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def modes_with_compare(parser: argparse.ArgumentParser) -> argparse._MutuallyExclusiveGroup:
    """A group of modes that exclude each other, holding `--compare REV` (the revision REV
    against this tree, interleaved in one run); the script adds its other modes to it."""
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument(
        "--compare", metavar="REV", help="git revision REV against this tree, interleaved"
    )
    return modes


def machine_line() -> str:
    """One line naming where the figures were measured."""
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{datetime.now(UTC).strftime('%Y-%m-%d')}"
    )


def write_section(name: str, title: str, command: str, body: str) -> None:
    """Replace (or append) section `name` of BENCHMARKS.md with `body` (markdown)."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    section = (
        f"{start}\n## {title}\n\n"
        f"Command: `{command}`  \nMachine: {machine_line()}\n\n{body.rstrip()}\n{end}"
    )
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else HEADER
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = BENCHMARKS_MD.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, BENCHMARKS_MD)
    print(section, file=sys.stdout)


def export_revision(ref: str, folder: Path) -> Path:
    """Git revision `ref` of this repository as plain files in `folder`/before (what a
    `--compare REF` benchmark runs as its "before" tree, beside this one)."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    before = folder / "before"
    before.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    return before
