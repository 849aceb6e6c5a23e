"""The shipped examples are valid, listed, copyable, and the JSON Schema describes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from packets.dump import dump_packet
from packets.examples import DEFAULT_EXAMPLE, example_names
from packets.json_schema import packet_json_schema
from packets.load import parse_packet
from workbench.cli import main

REQUIRED = {
    "fusion-tiling-llama-decode",
    "mapping-dynamic-shapes",
    "fusion-burst-p95",
    "llm-serving-continuous",
}


def test_the_three_examples_ship_and_the_default_is_first() -> None:
    assert set(example_names()) >= REQUIRED
    assert DEFAULT_EXAMPLE == "fusion-tiling-llama-decode"


def test_check_passes_every_example(capsys: pytest.CaptureFixture[str]) -> None:
    from packets.examples import example_path

    paths = [str(example_path(name)) for name in example_names()]
    assert main(["check", *paths]) == 0
    out = capsys.readouterr().out
    assert out.count(": ok") == len(paths)


def test_examples_are_valid_and_canonical_dump_round_trips(all_examples: dict[str, bytes]) -> None:
    for name, raw in all_examples.items():
        packet = parse_packet(raw, name).packet
        assert packet.id == name
        once = dump_packet(packet)
        assert dump_packet(parse_packet(once, name).packet) == once


def test_examples_list_and_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples"]) == 0
    listing = capsys.readouterr().out
    for name in REQUIRED:
        assert name in listing
    assert main(["examples", "copy", DEFAULT_EXAMPLE, str(tmp_path)]) == 0
    copied = tmp_path / f"{DEFAULT_EXAMPLE}.yaml"
    assert main(["check", str(copied)]) == 0
    before = copied.read_bytes()
    assert main(["examples", "copy", DEFAULT_EXAMPLE, str(copied)]) == 2  # no silent overwrite
    assert copied.read_bytes() == before
    assert main(["examples", "copy", "no-such-example", str(tmp_path)]) == 2


def test_json_schema_accepts_examples_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == packet_json_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert list(schema["properties"]) == [
        "format",
        "id",
        "title",
        "topic",
        "anchor_metric",
        "seed",
        "owners",
        "inputs",
        "baseline",
        "candidates",
        "outputs",
        "signatures",
    ]
    # Every top-level key of every example is a schema property, and required ones are present.
    for name in example_names():
        from packets.examples import example_bytes

        data = yaml.safe_load(example_bytes(name))
        assert set(data) <= set(schema["properties"])
        assert set(schema["required"]) <= set(data)


# The Azure LLM inference trace 2023, conversation service (the serving example's comments):
# published median prompt 1,020 tokens, median output 129, output P95 451.
AZURE_CONV = {"prompt_p50": 1020, "output_p50": 129, "output_p95": 451}
SLAB_CUMULATIVE = (0.10, 0.25, 0.40, 0.60, 0.80, 0.925, 0.975, 1.0)


def test_the_serving_example_draws_the_cited_trace_quantiles() -> None:
    """Each length mix is the trace's quantile bins (packets/FORMAT.md "Length mixes from a
    trace"): the slab probabilities, ascending values, and draws whose median (and output
    P95) are the published figures."""
    import numpy as np

    from packets.examples import example_path
    from packets.load import load_packet
    from triage.scenario import build_scenario

    serving = build_scenario(load_packet(example_path("llm-serving-continuous"))).serving
    for mix in (serving.prompt_len, serving.output_len):
        assert list(mix.values) == sorted(mix.values)
        assert np.cumsum(mix.weights).round(6).tolist() == list(SLAB_CUMULATIVE)
    rng = np.random.default_rng(1)
    prompts, outputs = serving.prompt_len.draw(200_000, rng), serving.output_len.draw(200_000, rng)
    assert np.percentile(prompts, 50) == AZURE_CONV["prompt_p50"]
    assert np.percentile(outputs, 50) == AZURE_CONV["output_p50"]
    assert np.percentile(outputs, 95) == AZURE_CONV["output_p95"]
