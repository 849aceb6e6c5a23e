"""Request streams, input checks and queue planning."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.runtime.inputs import (
    SLA,
    Arrivals,
    BatchPolicy,
    RuntimeConfig,
    RuntimeHardware,
    ServiceSpec,
    ShapeMix,
    Workload,
)
from model.runtime.queues import affinity_core_sets, plan_queues, shape_columns
from model.runtime.simulate import simulate
from model.runtime.workload import generate_requests
from packets.errors import PacketError
from packets.trace import read_trace
from tests.runtime.helpers import pinned_config

PINNED = ServiceSpec("distribution", "lognormal", 2.0, 0.5)


def workload(arrivals: Arrivals, n: int = 200_000) -> Workload:
    return Workload(arrivals, ShapeMix((128, 512, 2048), (1.0, 2.0, 1.0)), n)


def test_streams_are_reproducible_bit_for_bit() -> None:
    w = workload(Arrivals("gamma", rate_per_s=500.0, cv=3.0), 1000)
    a, b = generate_requests(w, PINNED, 42), generate_requests(w, PINNED, 42)
    for field in dataclasses.fields(a):
        assert np.array_equal(getattr(a, field.name), getattr(b, field.name))
    c = generate_requests(w, PINNED, 43)
    assert not np.array_equal(a.arrival_ms, c.arrival_ms)


def test_service_draws_do_not_depend_on_the_arrival_process() -> None:
    """Separate streams per kind of draw: counterfactuals and sweeps keep the same draws."""
    poisson = generate_requests(workload(Arrivals("poisson", rate_per_s=100.0), 500), PINNED, 5)
    gamma = generate_requests(workload(Arrivals("gamma", rate_per_s=900.0, cv=2), 500), PINNED, 5)
    assert np.array_equal(poisson.service_draw_ms, gamma.service_draw_ms)
    assert np.array_equal(poisson.seq_len, gamma.seq_len)


@pytest.mark.parametrize(("process", "cv"), [("poisson", 1.0), ("gamma", 0.5), ("gamma", 3.0)])
def test_arrival_rate_and_burstiness(process: str, cv: float) -> None:
    """Mean gap 1000/rate ms and gap cv as asked, within 4 standard errors (n = 200k)."""
    s = generate_requests(workload(Arrivals(process, rate_per_s=250.0, cv=cv)), PINNED, 1)
    gaps = np.diff(s.arrival_ms)
    n = len(gaps)
    assert abs(np.mean(gaps) - 4.0) <= 4 * (4.0 * cv) / np.sqrt(n)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(cv, rel=0.05)


def test_shape_mix_and_lognormal_service() -> None:
    s = generate_requests(workload(Arrivals("poisson", rate_per_s=1.0)), PINNED, 3)
    share = np.mean(s.seq_len == 512)
    assert abs(share - 0.5) <= 4 * np.sqrt(0.25 / 200_000)  # 4 binomial standard errors
    assert set(np.unique(s.seq_len)) == {128, 512, 2048}
    d = s.service_draw_ms
    assert np.mean(d) == pytest.approx(2.0, rel=0.01)
    assert np.std(d) / np.mean(d) == pytest.approx(0.5, rel=0.03)


def test_trace_replays_repeats_and_rescales(tmp_path) -> None:
    path = tmp_path / "arrivals.txt"
    path.write_text("# from the field\n10\n12.5\n\n20\n", encoding="utf-8")
    trace = read_trace(path) + 10.0  # read_trace shifts the first arrival to 0
    assert trace.tolist() == [10.0, 12.5, 20.0]
    replay = generate_requests(workload(Arrivals("trace", trace_ms=trace), 7), PINNED, 0)
    # span 10 ms + one mean gap 5 ms = period 15 ms
    assert replay.arrival_ms.tolist() == [10, 12.5, 20, 25, 27.5, 35, 40]
    faster = Arrivals("trace", rate_per_s=400.0, trace_ms=trace)  # mean gap 2.5 ms, not 5
    rescaled = generate_requests(workload(faster, 3), PINNED, 0).arrival_ms
    assert rescaled.tolist() == [10.0, 11.25, 15.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\nfast\n", (2, r"expected an arrival time in ms, got text \(4 chars\)")),
        ("5\n3\n", (2, r"arrival times must not decrease \(3.0 < 5.0\)")),
        ("-1\n2\n", (1, r"arrival time must be finite and >= 0")),
        ("7\n", (1, r"a trace needs at least two arrival times")),
    ],
)
def test_bad_trace_files_name_file_and_line(tmp_path, text: str, message) -> None:
    path = tmp_path / "arrivals.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PacketError) as raised:
        read_trace(path)
    (problem,) = raised.value.problems
    line, words = message
    assert (problem.file, problem.line) == (str(path), line)
    assert re.search(words, problem.message)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Arrivals("poisson"), r"inputs.workload.arrivals.rate_per_s must be a number > 0"),
        (lambda: Arrivals("uniform", 1.0), r"inputs.workload.arrivals.process must be one of"),
        (lambda: ShapeMix((1, 2), (1.0,)), r"seq_len.weights has 1 entries, values has 2"),
        (lambda: BatchPolicy(0), r"batch_policy.max_batch must be >= 1"),
        (lambda: BatchPolicy(2, -1.0), r"batch_policy.max_queue_delay_ms must be"),
        (lambda: ServiceSpec("distribution", "gamma", 1.0), r"service.dist must be one of"),
        (lambda: ServiceSpec("distribution", "lognormal", 1.0), r"service.cv must be > 0"),
        (lambda: RuntimeHardware(0, 10.0), r"hardware.cores must be >= 1"),
        (lambda: SLA(p99_ms=-5.0), r"inputs.sla.p99_ms must be a number > 0 \(got -5.0\)"),
        (
            lambda: dataclasses.replace(pinned_config(cores=1, rate_per_s=1), placement="fastest"),
            r"placement must be one of central-queue, round-robin",
        ),
        (
            lambda: dataclasses.replace(
                pinned_config(cores=1, rate_per_s=1), compiled_shapes=(8, 4)
            ),
            r"compiled_shapes.seq_len must be positive, ascending",
        ),
    ],
)
def test_bad_inputs_name_the_packet_field(build, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_affinity_gives_cores_in_proportion_to_work() -> None:
    sets = affinity_core_sets(np.array([6.0, 1.0, 1.0]), 8)
    assert [s.tolist() for s in sets] == [[0, 1, 2, 3, 4, 5], [6], [7]]
    assert [s.tolist() for s in affinity_core_sets(np.array([0.1, 10.0]), 4)] == [[0], [1, 2, 3]]
    many = affinity_core_sets(np.array([5.0, 4.0, 3.0, 2.0, 1.0]), 2)  # LPT onto 2 cores
    assert [int(s[0]) for s in many] == [0, 1, 1, 0, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=8), st.integers(1, 12))
def test_affinity_always_covers_the_cores_once(work, cores: int) -> None:
    sets = affinity_core_sets(np.array(work), cores)
    flat = np.concatenate(sets)
    assert all(len(s) >= 1 for s in sets)
    if len(work) <= cores:
        assert sorted(flat.tolist()) == list(range(cores))


def test_shape_affinity_pins_each_bucket_to_its_cores() -> None:
    cfg = RuntimeConfig(
        workload=Workload(
            Arrivals("poisson", rate_per_s=2000.0), ShapeMix((100, 300, 900), (3, 1, 1)), 4000
        ),
        hardware=RuntimeHardware(cores=5, hbm_gbs=1.0),
        placement="shape-affinity",
        service=ServiceSpec("distribution", "exponential", 1.0),
        compiled_shapes=(128, 512),  # 900 falls back: its own group
    )
    result = simulate(cfg)
    plan = plan_queues(cfg, shape_columns(cfg, None), result.stream)
    for group, shape in enumerate((100, 300, 900)):
        cores = set(plan.lane_core_idx[plan.lane_core_ptr[group] : plan.lane_core_ptr[group + 1]])
        used = set(result.requests.core[result.requests.seq_len == shape].tolist())
        assert used <= cores
    assert [plan.lane_core_ptr[g + 1] - plan.lane_core_ptr[g] for g in range(3)] == [3, 1, 1]


def test_bucketing_keeps_batches_within_one_bucket() -> None:
    cfg = RuntimeConfig(
        workload=Workload(
            Arrivals("poisson", rate_per_s=3000.0), ShapeMix((100, 300, 900), (1, 1, 1)), 3000
        ),
        hardware=RuntimeHardware(cores=2, hbm_gbs=1.0),
        batch_policy=BatchPolicy(max_batch=8, max_queue_delay_ms=2.0, bucketing=True),
        service=ServiceSpec("distribution", "exponential", 2.0),
        compiled_shapes=(128, 512),
    )
    req = simulate(cfg).requests
    bucket = {100: 0, 300: 1, 900: 2}  # 900 is above the largest bucket: the fallback queue
    for batch in np.unique(req.batch):
        assert len({bucket[s] for s in req.seq_len[req.batch == batch].tolist()}) == 1
    unbucketed = simulate(dataclasses.replace(cfg, batch_policy=BatchPolicy(8, 2.0))).requests
    mixed = [len(set(unbucketed.seq_len[unbucketed.batch == b].tolist())) for b in range(50)]
    assert max(mixed) > 1
