"""The `workbench` command line (placeholder until the packet format lands)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("workbench: not yet", file=sys.stderr)
    return 2
