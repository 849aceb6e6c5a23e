"""Elementwise kernels in a write-back shared cache (issue 11, layer ops): which inputs a kernel
finds in the cache when a layer's kernels run in sequence, and which of its writes are still
dirty in the cache when it ends (shared data; a missing file fails, never skips)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.compiler.accuracy import (
    ELEMENTWISE_KERNELS,
    accuracy_report,
    predict_kernels,
    reads_resident_input,
)
from model.compiler.hardware import preset
from model.compiler.kernels import deferred_write_bytes, elementwise_phase, resident_bytes
from model.compiler.measured import load_measured

A100 = preset("a100-sxm")
MIB = 2.0**20


def _time(hw, reads, writes, **kw) -> float:
    return float(elementwise_phase(hw, reads, writes, 0.0, standalone=True, **kw).time_us[0, 0])


def _vidur_rows(kind: str, rows, cols: int) -> pl.DataFrame:
    rows = np.asarray(rows, dtype=np.int64)
    return pl.DataFrame({
        "op": ["elementwise"] * len(rows), "dtype": ["fp16"] * len(rows),
        "kind": [kind] * len(rows), "rows": rows, "cols": [cols] * len(rows),
        "latency_us": [1.0] * len(rows), "source": ["vidur profiling Llama-2-7b"] * len(rows),
    })  # fmt: skip


def test_the_resident_share_is_half_the_cache_as_the_core_sees_it() -> None:
    """A100: 20 MiB of the 40 MiB L2 (two partitions, each caching what its own GPCs read);
    a core sharing the cache with another busy core keeps half of its share."""
    assert resident_bytes(A100) == 20 * MIB
    assert resident_bytes(preset("h100-sxm")) == 25 * MIB
    npu = preset("npu-8c")
    assert resident_bytes(npu.with_busy_cores(2)) == resident_bytes(npu) / 2


def test_writes_stay_dirty_up_to_the_resident_bytes_then_in_proportion() -> None:
    cache = resident_bytes(A100)
    reads = np.array([0.0, 1 * MIB, 10 * MIB, 20 * MIB, 40 * MIB])
    writes = np.array([5 * MIB, 5 * MIB, 10 * MIB, 20 * MIB, 40 * MIB])
    deferred = deferred_write_bytes(A100, reads, writes)
    fits = reads + writes <= cache
    np.testing.assert_array_equal(deferred[fits], writes[fits])  # all of them stay
    # beyond the cache the last `cache` bytes of the stream hold their share of the writes
    np.testing.assert_allclose(deferred[~fits], (writes * cache / (reads + writes))[~fits])
    assert deferred_write_bytes(A100, 0.0, 0.0) == 0.0


@settings(max_examples=80, deadline=None)
@given(reads=st.floats(0, 4e8), writes=st.floats(0, 4e8), more=st.floats(1, 4e8),
       warm=st.booleans(), write_back=st.booleans())  # fmt: skip
def test_hbm_bytes_and_time_never_fall_as_a_stream_grows(reads, writes, more, warm, write_back):
    """Deferring writes and serving inputs from the cache can never make a larger stream
    cheaper: HBM bytes and time are monotone in reads and in writes (the all-or-nothing hit
    flips once, to HBM, at the resident size)."""

    def cost(r, w):
        c = elementwise_phase(A100, r, w, 0.0, standalone=True, warm_cache=warm,
                              write_back=write_back, inflight_bytes_per_unit=19 * 1024.0)  # fmt: skip
        return c.hbm_bytes[0, 0], c.time_us[0, 0]

    base = cost(reads, writes)
    for grown in (cost(reads + more, writes), cost(reads, writes + more)):
        assert grown[0] >= base[0] * (1 - 1e-12) and grown[1] >= base[1] * (1 - 1e-12)
    # the cache only ever helps, and never beyond every byte passing it at its feed rate
    cold = elementwise_phase(A100, reads, writes, 0.0, standalone=True,
                             inflight_bytes_per_unit=19 * 1024.0).time_us[0, 0]  # fmt: skip
    feed = (reads + writes) / (A100.unit_feed_bps() * A100.units_per_core) * 1e6
    assert feed * (1 - 1e-12) <= base[1] <= cold * (1 + 1e-12)


def test_inputs_hit_the_cache_up_to_its_resident_size_and_not_beyond() -> None:
    """The L2 crossover sits at the cited capacity: a just-written input streams from the cache
    (shorter latency, no HBM reads) while the kernel's traffic fits 20 MiB, from HBM above."""
    inflight = ELEMENTWISE_KERNELS["rmsnorm"].inflight_kib_per_unit * 1024.0
    cache = resident_bytes(A100)
    for total in (0.99 * cache, 1.01 * cache):
        warm = elementwise_phase(A100, total / 2, total / 2, 0.0, standalone=True,
                                 warm_cache=True, inflight_bytes_per_unit=inflight)  # fmt: skip
        cold = elementwise_phase(A100, total / 2, total / 2, 0.0, standalone=True,
                                 inflight_bytes_per_unit=inflight)  # fmt: skip
        if total < cache:
            assert warm.hbm_bytes[0, 0] == pytest.approx(total / 2)  # only the writes
            assert warm.time_us[0, 0] < cold.time_us[0, 0] / 1.4
        else:
            assert warm.hbm_bytes[0, 0] == cold.hbm_bytes[0, 0] == pytest.approx(total)
            assert warm.time_us[0, 0] == cold.time_us[0, 0]


def test_an_hbm_bound_stream_pays_only_the_writes_it_cannot_leave_dirty() -> None:
    """A residual add (two inputs from HBM, one output) that fits the resident bytes moves only
    its reads in the kernel; far beyond them it pays nearly all of its writes."""
    core_hbm = A100.core_hbm_bps()
    tensor = 4 * MIB  # 12 MiB in all, within 20 MiB
    small = _time(A100, 2 * tensor, tensor, write_back=True)
    assert small == pytest.approx(2 * tensor / core_hbm * 1e6)
    assert _time(A100, 2 * tensor, tensor) == pytest.approx(3 * tensor / core_hbm * 1e6)
    large = 64 * MIB  # 192 MiB in all: a tenth of the writes stays dirty
    expected = (3 * large - large * resident_bytes(A100) / (3 * large)) / core_hbm * 1e6
    assert _time(A100, 2 * large, large, write_back=True) == pytest.approx(expected)


def test_without_a_sequence_source_the_stream_is_the_plain_one() -> None:
    """The block model and the attention op's preprocessing kernel pass neither flag: their
    elementwise cost is total bytes / min(core HBM rate, units x in-flight / fill), unchanged."""
    reads = np.array([1e3, 1e6, 3e7, 4e8])
    writes = reads / 2
    for inflight in (np.inf, 16 * 1024.0):
        cost = elementwise_phase(A100, reads, writes, 0.0, standalone=False,
                                 inflight_bytes_per_unit=inflight)  # fmt: skip
        rate = min(A100.core_hbm_bps(), A100.units_per_core * inflight / A100.fill_s())
        np.testing.assert_allclose(cost.time_us[:, 0], (reads + writes) / rate * 1e6)
        np.testing.assert_array_equal(cost.hbm_bytes[:, 0], reads + writes)


def test_only_ops_that_follow_an_elementwise_op_in_the_block_find_their_input_resident() -> None:
    """In a llama block rmsnorm follows a residual add; rope, silu_mul and the adds follow a GEMM,
    whose weight stream evicts its output from the cache."""
    assert reads_resident_input("rmsnorm")
    for kind in ("rope", "silu_mul", "add"):
        assert not reads_resident_input(kind), kind
    assert not reads_resident_input("gelu")  # not in the block: nothing is assumed resident


@pytest.mark.parametrize(("kind", "cols"), [("add", 4096), ("rmsnorm", 4096),
                                            ("silu_mul", 1376), ("silu_mul", 11008),
                                            ("rope", 1024), ("rope", 8192)])  # fmt: skip
def test_predicted_time_never_falls_as_rows_grow(kind, cols) -> None:
    rows = np.unique(np.geomspace(1, 65536, 400).astype(np.int64))
    predicted = predict_kernels(_vidur_rows(kind, rows, cols), A100)
    assert np.all(np.diff(predicted) >= -1e-9)


@pytest.fixture(scope="module")
def layer_ops() -> tuple[dict, pl.DataFrame, np.ndarray]:
    frame = load_measured("layer_ops")
    return accuracy_report(frame, A100), frame, predict_kernels(frame, A100)


def test_layer_ops_meet_the_issue_target(layer_ops) -> None:
    """Issue 11: the A100 layer-op table (Vidur) at <= 9% MdAPE (9.8% with every operand that
    fits half the L2 assumed resident and every write paid in the kernel)."""
    report, _, _ = layer_ops
    assert report["rows"] == 9258 and report["implausible_rows"] == 138
    assert report["mdape"] <= 0.09
    assert report["by_op"]["gemm"]["mdape"] <= 0.09  # unchanged: the GEMM path is not touched


def test_every_elementwise_op_is_predicted_within_the_layer_target_without_bias(layer_ops):
    """Each op on its own: within the per-op layer target (12%), better than the naive roofline, and
    with its median measured / predicted within 10% of 1 (the resident-everything rule had the
    add at 22.7% and the < 10 us kernels predicted 21% too fast)."""
    report, frame, predicted = layer_ops
    kinds = frame["kind"].cast(pl.String).fill_null("").to_numpy()
    for kind in ELEMENTWISE_KERNELS:
        op = report["by_kind"][kind]
        assert op["rows"] > 800, kind
        assert op["mdape"] <= 0.12, kind  # the per-op layer target (test_accuracy.py)
        assert op["mdape"] < op["naive_mdape"], kind  # the add is HBM-bound: naive 11.5%
        assert 0.9 <= op["median_ratio"] <= 1.1, kind
        sel = kinds == kind
        assert np.all(np.isfinite(predicted[sel])) and np.all(predicted[sel] >= A100.min_kernel_us)
    for cell in ("elementwise|<10us", "elementwise|10-100us", "elementwise|>=100us"):
        assert 0.9 <= report["by_regime"][cell]["ratio_p50"] <= 1.1, cell
