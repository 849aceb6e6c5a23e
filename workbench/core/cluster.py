"""`--scheduler tcp://HOST:PORT` (or DASK_SCHEDULER_ADDRESS): where sweeps, validation and the
search run.

Without either, work runs on the local thread pool (triage/workunits.py). With one, a Dask
distributed `Client` connects to that scheduler and its `get_executor(pure=False)` (a
`concurrent.futures.Executor`; executor_of) runs the same chunks on the cluster's workers;
the engine is Dask's own, nothing here speaks its protocol. Workers need this package installed at the same
version (`pip install 'handoff-workbench[cluster]'`): a task names `triage.workunits.run_chunk`
and carries plan specs, configurations and seeds, never arrays.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from packets.errors import UsageError

ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Engine:
    """An executor and the worker threads behind it (None: the local thread pool)."""

    executor: Executor | None
    parallelism: int | None
    where: str


def add_scheduler_option(parser: argparse.ArgumentParser) -> None:
    """`--scheduler ADDR` on a command that runs model work."""
    parser.add_argument(
        "--scheduler",
        metavar="ADDR",
        help=f"run on a Dask cluster at tcp://HOST:PORT (default: ${ENV}, else this machine)",
    )


def scheduler_address(option: str | None) -> str | None:
    """The scheduler to use: the option, else the environment, else None (local)."""
    return option or os.environ.get(ENV) or None


def executor_of(client: Any) -> Executor:
    """The client's executor for chunks, with `pure=False`: a chunk's task key is then a UUID,
    not a token of its arguments. Dask's default (pure) walks every point's dataclasses to
    hash them, ~1 ms of the submitting process's CPU per point, as long as a tenth of the
    point's own run (BENCHMARKS.md "Sweeps on a cluster"); chunks are never resubmitted
    equal, so the token would buy nothing."""
    return client.get_executor(pure=False)


@contextmanager
def engine(option: str | None) -> Iterator[Engine]:
    """The engine for `--scheduler` (UsageError when Dask is missing or unreachable)."""
    address = scheduler_address(option)
    if address is None:
        yield Engine(None, None, "local threads")
        return
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(
            f"--scheduler {address}: Dask is not installed "
            "(pip install 'handoff-workbench[cluster]')"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise UsageError(f"--scheduler {address}: cannot connect: {reason}") from None
    try:
        threads = sum(client.nthreads().values())
        if threads == 0:
            raise UsageError(f"--scheduler {address}: the cluster has no workers")
        yield Engine(executor_of(client), threads, f"{address} ({threads} worker threads)")
    finally:
        client.close()
