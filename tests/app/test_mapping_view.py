"""The Mapping step's numbers: compile-time predictions against a run, per shape and per bucket.

Each check is a mechanism: a batch runs at its largest member's shape, so a request can only be
padded up (never down), a shape outside every bucket always runs the generic path, and with one
request per batch the run is exactly what compile time predicts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from packets.examples import example_bytes
from packets.load import parse_packet
from triage.runs import run_scenario
from triage.scenario import build_scenario
from workbench.core.session import WorkingPacket, open_working
from workbench.mapping.view import FALLBACK, bucket_view, shape_view, with_candidate

EXAMPLES = Path(__file__).resolve().parents[2] / "packets" / "examples"


def views(candidate: str | None = None, *, edits: tuple[tuple[bytes, bytes], ...] = ()):  # type: ignore[no-untyped-def]
    """Shape and bucket views of the mapping example (4,000 requests) for one configuration."""
    raw = example_bytes("mapping-dynamic-shapes").replace(b"requests: 20000", b"requests: 4000")
    for old, new in edits:
        assert old in raw
        raw = raw.replace(old, new)
    loaded = parse_packet(raw, "mapping.yaml", EXAMPLES)
    scenario = build_scenario(loaded, candidate)
    result = run_scenario(scenario, "mapping.yaml").result
    mix = loaded.packet.inputs.workload.shapes.seq_len
    table = scenario.service_table
    compiled = list(scenario.config.compiled_shapes.seq_len)
    return (
        shape_view(table, result, mix.values, mix.weights),
        bucket_view(table, result, compiled, mix.values, mix.weights),
        result,
    )


@pytest.fixture(scope="module")
def baseline():  # type: ignore[no-untyped-def]
    return views()


def test_shares_are_distributions_and_follow_the_declared_mix(baseline) -> None:  # type: ignore[no-untyped-def]
    shapes, buckets, _ = baseline
    for share in (shapes.declared_share, shapes.observed_share):
        assert share.sum() == pytest.approx(1.0) and (share >= 0).all()
    for share in (buckets.declared_share, buckets.runtime_share):
        assert share.sum() == pytest.approx(1.0)
    # 3,600 measured draws: each share within 4 standard errors of its weight.
    se = np.sqrt(shapes.declared_share * (1 - shapes.declared_share) / 3600)
    assert (np.abs(shapes.observed_share - shapes.declared_share) < 4 * se + 1e-9).all()


def test_batches_only_pad_requests_up_and_shapes_outside_every_bucket_always_fall_back(
    baseline,  # type: ignore[no-untyped-def]
) -> None:
    shapes, buckets, result = baseline
    fell = shapes.predicted_fallback
    assert fell.tolist() == [False] * 7 + [True, True]  # 3072 and 4096: no compiled bucket
    assert (shapes.runtime_fallback[fell] == 1.0).all()
    assert (shapes.runtime_padding >= shapes.predicted_padding - 1e-12).all()
    assert (shapes.padded_up[~fell] > 0).any()  # batched with larger prompts
    assert shapes.runtime_fallback_rate == pytest.approx(
        float(np.mean(result.requests.fallback[result.first_measured :]))
    )
    assert shapes.runtime_fallback_rate > shapes.predicted_fallback_share  # batchmates drag
    assert buckets.bucket[-1] == FALLBACK and buckets.shapes[-1] == (3072, 4096)
    assert buckets.runtime_share[-1] == pytest.approx(shapes.runtime_fallback_rate)


def test_one_request_per_batch_runs_exactly_as_compile_time_predicts() -> None:
    shapes, buckets, _ = views(edits=((b"max_batch: 4", b"max_batch: 1"),))
    assert (shapes.padded_up == 0).all()
    np.testing.assert_array_equal(shapes.runtime_padding, shapes.predicted_padding)
    np.testing.assert_array_equal(shapes.runtime_fallback, shapes.predicted_fallback.astype(float))
    own = np.where(shapes.predicted_fallback, FALLBACK, shapes.bucket_shape)
    expected = [shapes.observed_share[own == b].sum() for b in buckets.bucket]
    np.testing.assert_allclose(buckets.runtime_share, expected)


def test_bucketed_batching_keeps_every_compiled_shape_in_its_own_bucket() -> None:
    shapes, _, _ = views("bucketed-batching")
    compiled = ~shapes.predicted_fallback
    assert (shapes.padded_up[compiled] == 0).all()
    np.testing.assert_allclose(shapes.runtime_padding[compiled], shapes.predicted_padding[compiled])


def test_an_added_bucket_removes_the_fallback_the_baseline_predicts() -> None:
    shapes, buckets, _ = views("add-4096-bucket")
    assert not shapes.predicted_fallback.any() and (shapes.runtime_fallback == 0).all()
    assert buckets.runtime_share[-1] == 0.0 and buckets.shapes[-2] == (3072, 4096)


def test_a_candidate_from_an_action_is_added_like_any_edit() -> None:
    raw = example_bytes("mapping-dynamic-shapes")
    loaded = parse_packet(raw, "mapping.yaml", EXAMPLES)
    working = open_working(loaded, None)
    action = {"name": "buckets-3072", "description": "Compile 3072.",
              "compiled_shapes": {"seq_len": [256, 512, 1024, 2048, 3072]}}  # fmt: skip
    added = with_candidate(working, action)
    assert isinstance(added, WorkingPacket)
    assert [c.name for c in added.packet.candidates][-1] == "buckets-3072"
    refused = with_candidate(working, {**action, "name": "add-4096-bucket"})  # a taken name
    assert not isinstance(refused, WorkingPacket) and "duplicate candidate name" in refused.message
