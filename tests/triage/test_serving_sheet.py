"""The serving worksheet's point and iteration split (triage/serving_sheet.py): the mean KV of a
decode step against enumeration, and the split priced as the continuous scheduler prices it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.runtime.serving import ServingStream, simulate_serving
from packets.examples import example_path
from packets.load import load_packet
from triage.scenario import build_scenario
from triage.serving_sheet import SheetPoint, iteration_split, mean_decode_kv, sheet_point

lengths = st.lists(
    st.tuples(st.integers(1, 5000), st.floats(0.01, 1.0)),
    min_size=1,
    max_size=6,
    unique_by=lambda t: t[0],
)


@pytest.fixture(scope="module")
def serving():  # type: ignore[no-untyped-def]
    return load_packet(example_path("llm-serving-continuous"))


def with_mixes(packet, prompts, outputs):  # type: ignore[no-untyped-def]
    generation = packet.inputs.workload.generation
    mix = {
        "prompt_len": {"values": [v for v, _ in prompts], "weights": [w for _, w in prompts]},
        "output_len": {"values": [v for v, _ in outputs], "weights": [w for _, w in outputs]},
    }
    generation = generation.model_validate(mix)
    workload = packet.inputs.workload.model_copy(update={"generation": generation})
    return packet.model_copy(
        update={"inputs": packet.inputs.model_copy(update={"workload": workload})}
    )


@settings(max_examples=60, deadline=None)
@given(prompts=lengths, outputs=lengths.filter(lambda o: any(v > 1 for v, _ in o)))
def test_mean_decode_kv_is_the_mean_over_every_decode_step(serving, prompts, outputs) -> None:  # type: ignore[no-untyped-def]
    packet = with_mixes(serving.packet, prompts, outputs)
    total = steps = 0.0
    for p, wp in prompts:  # a request of prompt p, output o decodes at KV p+1 ... p+o-1
        for o, wo in outputs:
            total += wp * wo * (o - 1) * p + wp * wo * (o - 1) * o / 2
            steps += wp * wo * (o - 1)
    assert mean_decode_kv(packet) == pytest.approx(total / steps, rel=1e-9)


def test_a_chunked_point_leaves_the_decode_steps_their_share_of_the_budget(serving) -> None:  # type: ignore[no-untyped-def]
    packet = serving.packet
    summary = {"throughput_per_s": 10.0, "latency_ms": {"mean": 3200.0}, "ttft_ms": {"mean": 200.0}}
    whole = sheet_point(summary, packet, packet.baseline, 1)
    assert whole.decode_batch == 30  # 10/s x 3 s decoding (Little's law)
    assert (whole.chunk, whole.chunked) == (1020, False)  # the most common prompt, whole
    chunked = packet.baseline.model_copy(
        update={"batch_policy": packet.baseline.batch_policy.model_copy(
            update={"chunked_prefill": True, "max_num_batched_tokens": 512})}
    )  # fmt: skip
    point = sheet_point(summary, packet, chunked, 1)
    assert (point.chunk, point.chunked) == (512 - 30, True)
    busy = {"throughput_per_s": 100.0, "latency_ms": {"mean": 9000.0}, "ttft_ms": {"mean": 0.0}}
    assert sheet_point(busy, packet, packet.baseline, 1).decode_batch == 64  # max_num_seqs


def test_the_split_charges_the_chunk_what_the_scheduler_charges_a_decode_step(serving) -> None:  # type: ignore[no-untyped-def]
    """One request decoding alone; a second arrives and is prefilled whole beside it: the
    decoding request's prefill interference (the kernel's own figure) is the split's chunk."""
    scenario = build_scenario(serving)
    table = scenario.iteration_table
    config = scenario.serving
    prompt = 300
    stream = ServingStream(
        arrival_ms=np.array([0.0, 100.0]),
        prompt_len=np.array([200, prompt], np.int64),
        output_len=np.array([400, 2], np.int64),
        route=np.zeros(2, np.int64),
        iteration_draws_ms=np.zeros(0),
    )
    config = dataclasses.replace(
        config, workload=dataclasses.replace(config.workload, requests=2, warmup_fraction=0.0)
    )
    result = simulate_serving(config, table, stream)
    interference = float(result.requests.interference_ms[0])
    assert interference > 0
    split = iteration_split(table, SheetPoint(1, 210, prompt, prompt, False))
    assert split.chunk_ms == pytest.approx(interference, rel=1e-12)
    assert split.iteration_ms == pytest.approx(split.decode_alone_ms + split.chunk_ms)
    assert split.chunk_bucket >= prompt and split.attention_shape >= split.chunk_bucket


def test_a_pinned_service_has_phases_but_no_iteration_split(serving) -> None:  # type: ignore[no-untyped-def]
    """Pinned iteration times price no kernels: the worksheet still reads the plan per phase,
    and says there is no split rather than inventing one."""
    from packets.schema import DistributionService
    from triage.serving_sheet import serving_worksheet

    pinned = serving.packet.baseline.model_copy(
        update={"service": DistributionService(source="distribution", dist="exponential",
                                               mean_ms=20.0)}
    )  # fmt: skip
    scenario = build_scenario(serving, config=pinned)
    assert scenario.iteration_table is None
    summary = {"throughput_per_s": 10.0, "latency_ms": {"mean": 3200.0}, "ttft_ms": {"mean": 200.0}}
    sheet = serving_worksheet(summary, scenario, scenario, None, None)
    assert sheet["iteration"] is None
    assert sheet["decode"]["point"] == {
        "batch": 30,
        "seq_len": sheet["point"]["kv_len"],
        "tokens": 30,
    }
    assert sheet["prefill"]["point"]["seq_len"] == sheet["point"]["chunk"] == 1020
