"""Run every benchmark script under benchmarks/ (`make bench`)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from benchmarks.report import argument_parser


def main() -> None:
    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if info.name.startswith("bench_"):
            print(f"== {info.name}")
            importlib.import_module(f"benchmarks.{info.name}").main()


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.run_all", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
