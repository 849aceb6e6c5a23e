"""Sweeps, the validation matrix and the search on a real Dask cluster give the local results.

One LocalCluster with 2 worker processes serves every test of this module (started once,
closed at the end): the same work runs on the local thread pool and on the cluster, and the
rows (and the search's candidate) must be identical, in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from packets.examples import example_path
from packets.load import load_packet
from tests.review.conftest import prepared_copy
from triage.review.matrix import MatrixSpec, run_matrix
from triage.search import run_search
from triage.sweeps import grid_points, parse_axis, run_grid
from triage.workunits import run_chunk, tables_built
from workbench.cli import main
from workbench.core.cluster import engine

distributed = pytest.importorskip("distributed")

DEFAULT = example_path("fusion-tiling-llama-decode")
MAPPING = example_path("mapping-dynamic-shapes")
SERVING = example_path("llm-serving-continuous")


@pytest.fixture(scope="module")
def cluster() -> Iterator[distributed.Client]:
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: None still binds 8787
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield client


def _axes(*texts: str):
    return [parse_axis(t) for t in texts]


def test_cluster_sweep_gives_the_local_rows_in_order(cluster: distributed.Client) -> None:
    loaded = load_packet(DEFAULT)
    axes = _axes(
        "inputs.workload.requests=3000",
        "fusion=none,standard",
        "batch_policy.max_batch=4,8",
        "placement=round-robin,least-loaded,shape-affinity",
    )
    local = run_grid(loaded, None, axes)
    remote = run_grid(loaded, None, axes, cluster.get_executor(), parallelism=2)
    assert remote.height == 12
    assert remote.equals(local)
    assert remote["fusion"].to_list() == ["none"] * 6 + ["standard"] * 6
    # Two distinct plans (fusion none / standard; batch and placement are runtime knobs): each
    # worker built each table it needed once, not once per point.
    built = cluster.run(tables_built)
    assert len(built) == 2
    assert all(1 <= n <= 2 for n in built.values())


ARRAY_PAGES = 256
"""A 1 MiB float64 array: 256 pages of 4 KiB."""
ARRAYS = 50


def _page_faults_for_arrays() -> int:
    """Minor page faults while this process makes and drops ARRAYS 1 MiB arrays in turn."""
    import resource

    import numpy as np

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(ARRAYS):
        np.ones(ARRAY_PAGES * 4096 // 8).sum()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_a_worker_that_ran_a_chunk_reuses_heap_for_point_sized_arrays(
    cluster: distributed.Client,
) -> None:
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which pins glibc's mmap
    # threshold at 128 KiB: every array of a point was mapped, faulted in page by page and
    # unmapped again (ARRAYS x ARRAY_PAGES faults here). After a chunk the worker's allocator
    # serves them from the heap it keeps: a reused block faults no pages.
    loaded = load_packet(DEFAULT)
    cluster.run(run_chunk, grid_points(loaded, None, _axes("inputs.workload.requests=200")))
    faults = cluster.run(_page_faults_for_arrays)
    assert len(faults) == 2
    assert all(n < ARRAYS * ARRAY_PAGES // 4 for n in faults.values()), faults


def test_equal_chunks_are_separate_tasks_cancelling_one_leaves_the_other(
    cluster: distributed.Client,
) -> None:
    # The engine's executor submits impure tasks: a key is a UUID, not a token of the chunk
    # (hashing every point cost the client ~1 ms a point). Equal chunks are then two tasks,
    # and cancelling one (a cancelled run's leftovers) does not cancel the other.
    loaded = load_packet(DEFAULT)
    chunk = grid_points(loaded, None, _axes("inputs.workload.requests=20000", "seed=1,2,3,4"))
    with engine(cluster.scheduler.address) as found:
        first = found.executor.submit(run_chunk, chunk)
        second = found.executor.submit(run_chunk, chunk)
        first.cancel()
        assert second.result(timeout=120) == run_chunk(chunk)


def test_cluster_matrix_gives_the_local_cells(cluster: distributed.Client) -> None:
    loaded = load_packet(MAPPING)
    candidate = loaded.packet.candidates[0].name
    spec = MatrixSpec(load_factors=(1.0, 1.25), seeds=2, requests=3000)
    seen: list[tuple[int, int]] = []
    local = run_matrix(loaded, candidate, spec)
    remote = run_matrix(
        loaded, candidate, spec, executor=cluster.get_executor(), parallelism=2,
        progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    assert remote == local
    assert len(remote.cells) == 2 * 2 * 2 * 2
    assert seen[-1] == (16, 16) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_serving_sweep_and_matrix_on_the_cluster_give_the_local_results(
    cluster: distributed.Client,
) -> None:
    """Serving work units (the continuous scheduler's config and iteration plan) travel to
    worker processes and come back with the local rows, in order."""
    loaded = load_packet(SERVING)
    axes = _axes(
        "inputs.workload.requests=2000",
        "batch_policy.chunked_prefill=true",
        "batch_policy.max_num_batched_tokens=512,768,2048",
    )
    local = run_grid(loaded, None, axes)
    remote = run_grid(loaded, None, axes, cluster.get_executor(), parallelism=2)
    assert remote.height == 3 and remote.equals(local)
    assert len(set(remote["ttft_p95_ms"].to_list())) == 3
    spec = MatrixSpec(load_factors=(1.0,), seeds=2, requests=2000)
    here = run_matrix(loaded, "chunked-prefill-768", spec)
    there = run_matrix(
        loaded, "chunked-prefill-768", spec, executor=cluster.get_executor(), parallelism=2
    )
    assert there == here
    assert all(c.tpot_p95_ms is not None for c in there.cells)


def test_cli_sweep_on_the_scheduler_prints_the_local_rows_and_parquet(
    cluster: distributed.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", str(MAPPING), "--set", "batch_policy.max_batch=1,4",
            "--set", "inputs.workload.requests=2000", "--json"]  # fmt: skip
    assert main(argv) == 0
    local = json.loads(capsys.readouterr().out)
    out = tmp_path / "rows.parquet"
    address = cluster.scheduler.address
    assert main([*argv, "--scheduler", address, "--parquet", str(out)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == local
    assert captured.err == ""  # not a terminal: no progress bar
    assert pl.read_parquet(out).to_dicts() == local


def test_cluster_search_gives_the_local_trials_and_candidate(cluster: distributed.Client) -> None:
    loaded = load_packet(DEFAULT)
    local = run_search(loaded, 24, 7, "p99", requests=2000)
    remote = run_search(loaded, 24, 7, "p99", cluster.get_executor(), parallelism=2, requests=2000)
    assert [(t.params, t.row, t.refused) for t in remote.trials] == [
        (t.params, t.row, t.refused) for t in local.trials
    ]
    assert remote.best is not None and remote.best.number == local.best.number
    assert [t.number for t in remote.pareto] == [t.number for t in local.pareto]


def test_cluster_serving_search_gives_the_local_trials(cluster: distributed.Client) -> None:
    loaded = load_packet(SERVING)
    local = run_search(loaded, 8, 3, "tpot_p95", requests=2000)
    remote = run_search(
        loaded, 8, 3, "tpot_p95", cluster.get_executor(), parallelism=2, requests=2000
    )
    assert [(t.params, t.row, t.refused) for t in remote.trials] == [
        (t.params, t.row, t.refused) for t in local.trials
    ]
    assert any(t.row is not None and "tpot_p95_ms" in t.row for t in remote.trials)
    assert remote.best is not None and remote.best.number == local.best.number


def test_cli_validates_several_packets_on_the_scheduler_one_line_each(
    cluster: distributed.Client, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = take_proposed(prepared_copy(tmp_path / "a"))
    b = take_proposed(prepared_copy(tmp_path / "b"))
    local = take_proposed(prepared_copy(tmp_path / "local"))
    unproposed = prepared_copy(tmp_path / "c")
    before = unproposed.read_bytes()
    capsys.readouterr()
    assert main(["validate", str(local), "--quick"]) == 0
    argv = ["validate", str(a), str(unproposed), str(b), "--quick", "--scheduler",
            cluster.scheduler.address]  # fmt: skip
    assert main(argv) == 2  # the unproposed packet is a usage error; the others still run
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 3  # local run, then a and b
    assert lines[1].startswith(f"{a}: 8 cells; candidate add-4096-bucket")
    assert lines[2].startswith(f"{b}: 8 cells;")
    assert captured.err.count("\n") == 1 and "no proposal yet" in captured.err
    assert unproposed.read_bytes() == before
    matrices = [load_packet(p).packet.outputs.validation_matrix for p in (local, a, b)]
    assert matrices[0] == matrices[1] == matrices[2]


def take_proposed(path: Path) -> Path:
    assert main(["propose", str(path), "--candidate", "add-4096-bucket", "--rationale",
                 "Compile the missing bucket."]) == 0  # fmt: skip
    return path


def test_an_unreachable_scheduler_is_one_line_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.core import cluster

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    out = tmp_path / "rows.parquet"
    argv = ["sweep", str(MAPPING), "--set", "batch_policy.max_batch=1,4",
            "--scheduler", "tcp://127.0.0.1:9", "--parquet", str(out)]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("workbench: --scheduler tcp://127.0.0.1:9: cannot connect")
    assert err.count("\n") == 1 and not out.exists()
