"""Bottleneck classification: each class is recognised on a run built to have that bottleneck."""

from __future__ import annotations

import dataclasses

import pytest

from model.runtime.bottleneck import CLASSES, classify
from model.runtime.inputs import Fallback
from model.runtime.summary import run_summary
from model.runtime.tables import service_table_from_arrays
from tests.runtime.helpers import pinned_config, table_config

COMMAND = "workbench run PACKET --seed 7"


def one_shape_table(launch=0.1, compute=0.1, memory=0.1, gbs=50.0, spill_share=0.0, max_batch=1):
    """A table whose parts are the same for every batch size (ms; memory at `gbs` GB/s)."""
    sizes = list(range(1, max_batch + 1))
    mem_bytes = memory * gbs * 1e6
    grid = [[x] for x in (launch, compute, memory, mem_bytes) for _ in sizes]
    return service_table_from_arrays(
        sizes,
        [256],
        *[grid[i * len(sizes) : (i + 1) * len(sizes)] for i in range(4)],
        spill_bytes=[[spill_share * mem_bytes]] * len(sizes),
    )


def classify_run(cfg, table=None, all_compiled=None) -> dict:
    report = run_summary(cfg, table, all_compiled_table=all_compiled, command=COMMAND)
    return report.summary["classification"]


def light(table, **kw):
    kw.setdefault("rate_per_s", 20.0)
    return table_config(table, cores=4, weights=(1.0,), requests=3000, seed=7, **kw)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ({"launch": 2.0}, "launch overhead"),
        ({"compute": 2.0}, "compute"),
        ({"memory": 2.0}, "memory bandwidth"),
        ({"memory": 2.0, "spill_share": 0.8}, "SRAM spill"),
    ],
)
def test_service_parts_decide_at_low_load(parts, expected) -> None:
    table = one_shape_table(**parts)
    cls = classify_run(light(table), table)
    assert cls["primary"]["class"] == expected
    assert cls["primary"]["command"] == COMMAND
    assert cls["primary"]["evidence"]["p99_tail_score"] >= 0.5


def test_overload_is_queueing_capacity() -> None:
    cfg = pinned_config(cores=4, rate_per_s=3800.0, requests=30_000, seed=7)  # rho 0.95
    cls = classify_run(cfg)
    assert cls["primary"]["class"] == "queueing/capacity"
    assert cls["primary"]["evidence"]["core_utilization_mean"] > 0.9


def test_random_placement_is_core_imbalance() -> None:
    """Random split over 8 cores at rho 0.85: requests queue behind busy cores while others
    idle; pooled placement would remove most of the p99."""
    cfg = pinned_config(cores=8, rate_per_s=6800.0, placement="random", requests=30_000, seed=7)
    cls = classify_run(cfg)
    assert cls["primary"]["class"] == "core imbalance"
    assert cls["primary"]["evidence"]["p99_drop_if_placement_off_ms"] > 0


def test_slow_generic_path_is_mapping_fallback() -> None:
    """30% of requests take a generic path 4x slower than the compiled one."""

    def table(compiled):
        t = [[0.2, 0.2]]
        return service_table_from_arrays(
            [1], [256, 512], t, t, [[0.3, 0.3 if compiled else 2.6]], [[1e6, 1e6]],
            compiled_shapes=(256, 512) if compiled else (256,),
        )  # fmt: skip

    generic, ideal = table(False), table(True)
    cfg = table_config(
        generic, cores=4, rate_per_s=200.0, weights=(0.7, 0.3), requests=3000, seed=7
    )
    cls = classify_run(dataclasses.replace(cfg, fallback=Fallback(50.0)), generic, ideal)
    assert cls["primary"]["class"] == "mapping fallback"


def test_long_batch_timer_at_low_load_is_batching_delay() -> None:
    table = one_shape_table(max_batch=8)
    cfg = light(table, rate_per_s=50.0, max_batch=8, max_queue_delay_ms=20.0)
    assert classify_run(cfg, table)["primary"]["class"] == "batching delay"


def _composition(**shares):
    row = dict.fromkeys(("batching", "queueing", "imbalance", "fallback", "contention"), 0.0)
    row.update(dict.fromkeys(("launch", "compute", "memory", "spill"), 0.0))
    row.update(shares)
    return {"requests": 10, "latency": 1.0, **row}


def test_tie_within_margin_goes_to_the_p95_tail() -> None:
    no_drops = {"p99_drop_if_off_ms": {}, "p95_drop_if_off_ms": {}}
    p99 = _composition(launch=0.42, compute=0.40, memory=0.18)
    p95 = _composition(launch=0.30, compute=0.60, memory=0.10)
    cls = classify(p99, p95, p95, no_drops, COMMAND)
    assert cls["primary"]["class"] == "compute"
    assert "tie-break" in cls["primary"]["threshold"]
    assert [s["class"] for s in cls["secondary"]] == ["launch overhead", "memory bandwidth"]
    clear = classify(_composition(launch=0.6, compute=0.4), p95, p95, no_drops, COMMAND)
    assert clear["primary"]["class"] == "launch overhead"
    assert set(clear["scores_p99_tail"]) == set(CLASSES)


def test_induced_queueing_moves_from_capacity_to_its_driver() -> None:
    """Contention that also caused queueing: its Shapley drop beyond its own stretch is
    taken from queueing/capacity and given to memory bandwidth."""
    comp = _composition(queueing=0.6, contention=0.1, compute=0.3)
    drops = {"p99_drop_if_off_ms": {"contention": 0.5}, "p95_drop_if_off_ms": {}}
    cls = classify(comp, comp, comp, drops, COMMAND)
    assert cls["scores_p99_tail"]["memory bandwidth"] == pytest.approx(0.5)
    assert cls["scores_p99_tail"]["queueing/capacity"] == pytest.approx(0.2)
    assert cls["primary"]["class"] == "memory bandwidth"
