"""Field specs come from the schema; typed text is read (and refused) the way packets are."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packets.examples import example_names, example_path
from packets.load import load_packet
from workbench.core.form import (
    FieldSpec,
    TextRefused,
    field_at,
    format_value,
    input_fields,
    parse_text,
    value_at,
)


def spec(*path: str) -> FieldSpec:
    return field_at(("inputs", *path))


def leaves(data: dict, prefix: str = "") -> set[str]:
    """Dotted paths of every value in a dumped packet section (lists count as one value)."""
    found = set()
    for key, value in data.items():
        path = f"{prefix}{key}"
        found |= leaves(value, path + ".") if isinstance(value, dict) else {path}
    return found


@pytest.mark.parametrize("name", example_names())
def test_every_inputs_value_of_the_examples_has_a_spec(name: str) -> None:
    specs = input_fields()
    labels = [s.label for s in specs]
    assert len(labels) == len(set(labels))
    assert {s.section for s in specs} == {"workload", "sla", "precision", "metadata", "hardware"}
    inputs = load_packet(example_path(name)).packet.inputs.model_dump(exclude_none=True)
    for leaf in leaves(inputs):  # a mapping field such as quality.measured covers its keys
        assert any(leaf == label or leaf.startswith(label + ".") for label in labels), leaf


def test_kinds_bounds_and_units_come_from_the_schema() -> None:
    p95 = spec("sla", "p95_ms")
    assert (p95.kind, p95.unit, p95.ge, p95.le, p95.optional) == ("number", "ms", 1e-3, 1e7, False)
    requests = spec("workload", "requests")
    assert (requests.kind, requests.gt, requests.le) == ("integer", 0, 10_000_000)
    assert spec("workload", "warmup_fraction").le == 0.9
    assert spec("hardware", "hbm_gbs").unit == "GB/s"
    assert spec("hardware", "sram_kib_per_unit").unit == "KiB"
    assert spec("workload", "arrivals", "rate_per_s").unit == "/s"
    assert spec("workload", "block", "dtype").choices == ("bf16", "fp16", "fp8", "int8", "fp32")
    values = spec("workload", "shapes", "seq_len", "values")
    assert (values.kind, values.whole) == ("numbers", True)
    assert spec("precision", "quality", "higher_is_better").kind == "bool"
    assert spec("hardware", "peak_tflops").kind == "mapping"


@pytest.mark.parametrize(
    ("path", "text", "message"),
    [
        (("sla", "p95_ms"), "-1", "must be at least 0.001, got -1.0"),
        (("sla", "p95_ms"), "abc", "expected a number"),
        (("sla", "p95_ms"), "", "required: enter a value"),
        (("sla", "p95_ms"), ".nan", "must be a finite number"),
        (("workload", "requests"), "1.5", "expected a whole number"),
        (("workload", "requests"), "010", "leading zero"),
        (("workload", "requests"), "20000000", "must be at most 1e+07"),
        (("workload", "warmup_fraction"), "0.95", "must be at most 0.9"),
        (("workload", "block", "kind"), "mpl", "must be one of llama-decoder, mlp, attention"),
        (("workload", "shapes", "seq_len", "values"), "512,,1024", "empty item"),
        (("workload", "shapes", "seq_len", "values"), "512, 1024.5", "expected a whole number"),
        (("hardware", "peak_tflops"), "bf16 989", "write key: value"),
        (("hardware", "peak_tflops"), "bf17: 989", "unknown key 'bf17'"),
        (("precision", "quality", "higher_is_better"), "yes", "expected true or false"),
    ],
)
def test_bad_text_is_refused_with_one_line(path: tuple[str, ...], text: str, message: str) -> None:
    with pytest.raises(TextRefused, match=None) as info:
        parse_text(spec(*path), text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_good_text_reads_as_values() -> None:
    assert parse_text(spec("sla", "p95_ms"), " 1e2 ") == 100.0
    assert parse_text(spec("workload", "requests"), "5000") == 5000
    assert parse_text(spec("sla", "min_throughput_per_s"), "") is None
    assert parse_text(spec("workload", "shapes", "seq_len", "values"), "[512, 1024]") == [512, 1024]
    assert parse_text(spec("hardware", "peak_tflops"), "bf16: 989.4, fp8: 1979") == {
        "bf16": 989.4,
        "fp8": 1979.0,
    }
    assert parse_text(spec("metadata", "firmware"), "7.03") == "7.03"  # text stays text


@pytest.mark.parametrize("name", example_names())
def test_every_example_value_survives_format_then_parse(name: str) -> None:
    packet = load_packet(example_path(name)).packet
    for field in input_fields():
        value = value_at(packet, field.path)
        assert parse_text(field, format_value(field, value)) == value, field.label


@given(st.floats(min_value=1e-3, max_value=1e7, allow_nan=False))  # p95_ms's physical range
def test_number_text_round_trips_exactly(value: float) -> None:
    p95 = spec("sla", "p95_ms")
    assert parse_text(p95, format_value(p95, value)) == value


@given(st.floats(min_value=1e-6, max_value=1e9))
def test_default_step_is_a_tenth_of_the_decade(value: float) -> None:
    step = spec("sla", "p95_ms").default_step(value)
    assert step <= value < 100 * step
    assert math.log10(step) == round(math.log10(step))
