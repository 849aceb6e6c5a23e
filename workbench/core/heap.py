"""The garbage-collector freeze the app and its long-lived screens share, and the pause its
background loads run under."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def freeze_heap() -> None:
    """Exclude every object alive now (modules, widgets, the loaded model) from future
    garbage-collector scans. A full collection over the ~270,000 objects of a started app
    paused the UI loop for ~110 ms (measured at the first focus of a Tune field); after this,
    collections only scan what is new. Call once the app has settled (it is cheap to repeat)."""
    gc.freeze()


_lock = threading.Lock()
_paused = 0  # loads running under `collector_paused`
_enable_after = False  # the collector was on when the first of them began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run a background load (the model's modules, numba's typing and target contexts, a
    screen module) with automatic collections off, then freeze what it built out of later
    scans and turn the collector back on as it was.

    Why: such a load builds ~80,000 long-lived objects and no garbage, and the collections its
    allocations trigger are the UI loop's longest stalls. A collection runs in whichever thread
    allocates, holding the interpreter lock throughout: numba's target context (`refresh`, the
    first kernel call) set off a full collection of 62 ms, during which the UI thread could
    not run (measured: a ticker thread's longest gap, 2026-12-01). Frozen afterwards, those
    objects are never scanned again, as `freeze_heap` does for start-up's. Loads may overlap
    (the screen loader and the model warm-up run in two threads): the collector comes back
    when the last one ends. Garbage the UI thread makes meanwhile waits for the next
    collection, or is frozen with the rest (a few KB, as `freeze_heap` already accepts)."""
    global _paused, _enable_after
    with _lock:
        if _paused == 0:
            _enable_after = gc.isenabled()
        _paused += 1
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0:
                gc.freeze()
                if _enable_after:
                    gc.enable()


def enable_collector() -> None:
    """Turn the collector on, or, while a load runs under `collector_paused`, have it come
    on when the last one ends (so an app's start-up never turns it on under a load)."""
    global _enable_after
    with _lock:
        if _paused:
            _enable_after = True
        else:
            gc.enable()
