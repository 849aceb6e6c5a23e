"""The `workbench` console script: start-up with the garbage collector off.

Start-up allocates a few hundred thousand long-lived objects (modules, the packet schema, the
app's widgets) and next to no garbage, yet with the collector on CPython rescans them again and
again as they pile up: about 40 ms of a 0.85 s start to the app's first frame (measured with
benchmarks/bench_app.py). So the collector is off while the program starts; `workbench.cli`
turns it back on as soon as the command line is parsed for every command but the app, and the
app turns it on after its first frame, once those objects are frozen out of later scans
(`workbench.app.freeze_heap`).

At exit the objects are frozen again (`gc.freeze`, no collection): interpreter shutdown runs
full collections whether or not the collector is on, and rescanning the whole heap of modules,
numba's typing context and the schema was ~0.2 s of CPU at the end of a small `workbench run`
(0.9 s -> 0.7 s; benchmarks/bench_cli.py). Objects still reachable are left to the operating
system, as they would be anyway; nothing is written at that point (files are replaced
atomically by the commands, standard streams are flushed by the interpreter).
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import types


def start_without_gc() -> None:
    """Turn the collector off for start-up (see the module docstring)."""
    gc.disable()


PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"
"""pydantic's module that finds plugins (`get_plugins`, as of pydantic 2.14), imported at the
first model class; at its top it imports `importlib.metadata` (and with it email, zipfile,
csv...) for the entry point scan that `PYDANTIC_DISABLE_PLUGINS` then skips."""


class PluginsOff(types.ModuleType):
    """Stands in for PYDANTIC_PLUGIN_LOADER while plugins are off: `get_plugins()` is empty, as
    pydantic's own is with PYDANTIC_DISABLE_PLUGINS=__all__, without importing
    `importlib.metadata` (3% of a warm start to the app's first frame: 638 -> 619 ms, 12
    interleaved starts each). Any other name pydantic asks of it loads the real module
    (`real_loader`), so a pydantic that reads more from it still gets what it expects."""

    def get_plugins(self) -> tuple[()]:
        return ()

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # import machinery probing: no reason to load anything
            raise AttributeError(name)
        return getattr(real_loader(), name)


def real_loader() -> types.ModuleType:
    """pydantic's own plugin loader, imported now in place of the stand-in (`PluginsOff`)."""
    current = sys.modules.get(PYDANTIC_PLUGIN_LOADER)
    if current is not None and not isinstance(current, PluginsOff):
        return current
    sys.modules.pop(PYDANTIC_PLUGIN_LOADER, None)
    return importlib.import_module(PYDANTIC_PLUGIN_LOADER)


def without_pydantic_plugins() -> None:
    """Validate packets with pydantic alone: no third-party pydantic plugin (an observability
    package registered under the `pydantic` entry point group) sees the packets this program
    reads, or changes how they validate. It also spares every command the scan of all
    installed packages' entry points at the first model class (~10 ms of each start), and the
    import of what that scan needs (`PluginsOff`)."""
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
    sys.modules.setdefault(PYDANTIC_PLUGIN_LOADER, PluginsOff(PYDANTIC_PLUGIN_LOADER))


def one_blas_thread() -> None:
    """Start OpenBLAS with one thread unless the user chose a number (`OPENBLAS_NUM_THREADS`).

    numpy's OpenBLAS starts a thread per core as numpy is imported, and each spins for its
    work for ~0.1 s before sleeping: 100 ms of a second core's CPU at every start, taken from
    the terminal, ssh and the app's own workers on a 2-core machine, for work that never
    comes. No BLAS call here touches float data (model/runtime/README.md, "Determinism"), so
    the threads have nothing to speed up. Must run before numpy is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> int:
    """Run the command line (the console script's entry point)."""
    start_without_gc()
    without_pydantic_plugins()
    one_blas_thread()
    from workbench.cli import main as cli_main

    try:
        return cli_main()
    finally:
        gc.freeze()  # the process exits next: keep shutdown from rescanning the heap
