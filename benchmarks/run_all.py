"""Run every benchmark script under benchmarks/ (`make bench`)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path


def main() -> None:
    here = Path(__file__).parent
    for info in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
        if info.name.startswith("bench_"):
            print(f"== {info.name}")
            importlib.import_module(f"benchmarks.{info.name}").main()


if __name__ == "__main__":
    main()
