"""Progress on stderr for long runs: done / total, rate and ETA (tqdm).

Shown only when stderr is a terminal, `--quiet` is not given, and the run is still going after
DELAY_S (short runs print nothing). The bar is cleared when the run ends, so stdout's table or
JSON is all that remains.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

DELAY_S = 2.0
"""Seconds before a bar appears: runs shorter than this stay silent
(WORKBENCH_PROGRESS_DELAY_S overrides it; tests set 0)."""


@contextmanager
def progress_bar(what: str, quiet: bool = False) -> Iterator[Callable[[int, int], None]]:
    """A `progress(done, total)` callback that drives a bar on stderr (a no-op when quiet or
    when stderr is not a terminal)."""
    if quiet or not sys.stderr.isatty():
        yield lambda done, total: None
        return
    from tqdm import tqdm

    delay = float(os.environ.get("WORKBENCH_PROGRESS_DELAY_S", DELAY_S))
    bars: list[tqdm] = []

    def update(done: int, total: int) -> None:
        if not bars:  # the first call says the total: the bar shows done / total from the start
            bars.append(
                tqdm(
                    desc=what,
                    total=total,
                    unit="run",
                    delay=delay,
                    leave=False,
                    file=sys.stderr,
                    dynamic_ncols=True,
                )
            )
        bar = bars[0]
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()
