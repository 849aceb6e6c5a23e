"""Editing the lab's working configuration: text forms, model-checked edits, candidate entries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packets.candidates import apply_candidate
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
from packets.schema import Candidate, GemmTile
from workbench.core.session import open_working
from workbench.lab.chart_data import reduce_points
from workbench.lab.config import (
    ConfigRefused,
    candidate_entry,
    changed_sections,
    edit_config,
    fusion_text,
    parse_fusion,
    parse_tile,
    tile_text,
    tileable_ops,
)
from workbench.lab.engine import Subject, subject

PATH = Path(example_path(DEFAULT_EXAMPLE))
WORKING = open_working(load_packet(PATH), PATH)
BASE = subject(WORKING)


@given(st.integers(1, 4096), st.integers(1, 4096), st.integers(1, 4096))
def test_gemm_tile_text_round_trips(m: int, n: int, k: int) -> None:
    assert parse_tile("gemm", tile_text(GemmTile(m=m, n=n, k=k))) == {"m": m, "n": n, "k": k}


def test_tile_and_fusion_text_forms() -> None:
    assert parse_tile("attention", "q64xkv128") == {"q": 64, "kv": 128}
    assert parse_tile("attention", "64x128") == {"q": 64, "kv": 128}
    assert parse_tile("gemm", " auto ") is None and parse_tile("gemm", "") is None
    with pytest.raises(ConfigRefused, match="write MxNxK"):
        parse_tile("gemm", "128x128")
    groups = "attn_norm+qkv_proj+rope, attention, out_proj"
    assert parse_fusion(groups) == [["attn_norm", "qkv_proj", "rope"], ["attention"], ["out_proj"]]
    assert fusion_text(parse_fusion(groups)) == groups
    assert parse_fusion("standard") == "standard"
    with pytest.raises(ConfigRefused, match="unknown preset 'fancy'"):
        parse_fusion("fancy")
    with pytest.raises(ConfigRefused, match="empty op"):
        parse_fusion("attn_norm++qkv_proj")
    assert [op for op, _ in tileable_ops(WORKING.packet)] == [
        "qkv_proj",
        "attention",
        "out_proj",
        "gate_up_proj",
        "down_proj",
    ]


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("tiles", "down_proj"), {"m": 100, "n": 256, "k": 64}, "tile granule 32"),
        (("tiles", "attention"), {"m": 64, "n": 64, "k": 64}, "attention"),
        (("fusion",), [["attn_norm", "qkv_proj"]], "groups leave out rope, attention"),
        (("fusion",), [["qkv_proj", "attn_norm"]], "groups"),
        (("compiled_shapes", "seq_len"), [1024, 512], "distinct and ascending"),
        (("batch_policy", "max_batch"), 0, "greater than 0"),
        (("batch_policy", "max_queue_delay_ms"), -1.0, "at least 0"),
        (("placement",), "nowhere", "must be one of"),
    ],
)
def test_invalid_edits_are_refused_with_one_line(path, value, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigRefused) as refused:
        edit_config(BASE, path, value)
    text = str(refused.value)
    assert message in text and "\n" not in text


def test_valid_edits_give_a_new_config_and_leave_the_old_one() -> None:
    config = edit_config(BASE, ("tiles", "down_proj"), {"m": 128, "n": 256, "k": 64})
    assert config.tiles["down_proj"] == GemmTile(m=128, n=256, k=64)
    assert BASE.config.tiles == {}
    assert changed_sections(WORKING.packet.baseline, config) == ["tiles.down_proj"]
    edited = Subject(BASE.loaded, "working", config, None, "k")
    back = edit_config(edited, ("tiles", "down_proj"), None)  # autotune again
    assert back == WORKING.packet.baseline


TILES = st.sampled_from([None, {"m": 128, "n": 256, "k": 64}, {"m": 64, "n": 64, "k": 32}])


@settings(max_examples=25, deadline=None)
@given(
    fusion=st.sampled_from(["none", "standard", "aggressive"]),
    down=TILES,
    max_batch=st.integers(1, 32),
    delay=st.sampled_from([0.0, 0.5, 2.0, 4.0]),
    placement=st.sampled_from(["central-queue", "round-robin", "least-loaded"]),
)
def test_any_working_config_saves_as_a_candidate_that_reproduces_it(
    fusion: str, down: dict | None, max_batch: int, delay: float, placement: str
) -> None:
    current = BASE
    for path, value in (
        (("fusion",), fusion),
        (("tiles", "down_proj"), down),
        (("batch_policy", "max_batch"), max_batch),
        (("batch_policy", "max_queue_delay_ms"), delay),
        (("placement",), placement),
    ):
        config = edit_config(current, path, value)
        current = Subject(current.loaded, "working", config, None, "k")
    entry = candidate_entry(WORKING.packet, current.config, "lab-1", "test")
    assert apply_candidate(WORKING.packet.baseline, Candidate.model_validate(entry)) == (
        current.config
    )
    knobs = set(changed_sections(WORKING.packet.baseline, current.config))
    assert ("fusion" in entry) == ("fusion" in knobs)
    assert ("placement" in entry) == ("placement" in knobs)


def test_candidate_entry_refuses_a_bad_name() -> None:
    with pytest.raises(ConfigRefused, match="name"):
        candidate_entry(WORKING.packet, BASE.config, "Not A Slug", "test")


@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=400), st.integers(2, 50))
def test_peak_reduction_keeps_the_maximum(values: list[float], points: int) -> None:
    y = np.array(values)
    x = np.arange(len(y), dtype=np.float64)
    rx, ry = reduce_points(x, y, points, peaks=True)
    assert len(rx) == len(ry) == min(len(y), points)
    assert ry.max() == y.max()  # a burst survives however narrow the chart
    px, _ = reduce_points(x, y, points, peaks=False)
    assert len(px) <= min(len(y), points) and px[0] == 0 and px[-1] == len(y) - 1
