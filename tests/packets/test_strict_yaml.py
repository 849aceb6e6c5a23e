"""YAML 1.1 surprises never reach a packet: text stays text, numbers must be numbers."""

from __future__ import annotations

import math

import pytest

from packets.errors import PacketError
from packets.load import parse_packet
from packets.strict_yaml import Plain, load_yaml, parse_bool, parse_number


@pytest.mark.parametrize(
    ("text", "value"),
    [("10", 10), ("-3", -3), ("0", 0), ("0x1F", 31), ("0o17", 15), ("1e3", 1000.0),
     ("2.5", 2.5), (".5", 0.5), ("-1.5e-3", -0.0015), (".inf", math.inf)],
)  # fmt: skip
def test_numbers_follow_yaml_1_2_core(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["010", "12:30", "1_000", "0b101", "ten", "1.2.3", ""])
def test_ambiguous_or_non_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_number(text)


def test_yaml_11_booleans_are_refused_with_advice() -> None:
    assert parse_bool("true") is True and parse_bool("FALSE") is False
    with pytest.raises(ValueError, match=r"YAML 1\.1 boolean"):
        parse_bool("on")


def test_plain_scalars_stay_text_until_the_schema_reads_them() -> None:
    loaded = load_yaml(b"a: no\nb: 010\nc: 12:30\nd: 'x'\ne: ~\n", "t.yaml")
    assert loaded.data == {"a": "no", "b": "010", "c": "12:30", "d": "x", "e": None}
    assert isinstance(loaded.data["a"], Plain) and not isinstance(loaded.data["d"], Plain)


def _with(raw: bytes, old: bytes, new: bytes) -> bytes:
    assert old in raw
    return raw.replace(old, new, 1)


def test_text_fields_keep_what_was_written(default_example_bytes: bytes) -> None:
    raw = _with(default_example_bytes, b'firmware: "7.03"', b"firmware: 7.10")
    raw = _with(raw, b"power_mode: nominal", b"power_mode: no")
    raw = _with(raw, b"compiler: npu-cc 4.2.1", b"compiler: 12:30")
    metadata = parse_packet(raw).packet.inputs.metadata
    assert (metadata.firmware, metadata.power_mode, metadata.compiler) == ("7.10", "no", "12:30")


def test_sexagesimal_number_is_refused(default_example_bytes: bytes) -> None:
    raw = _with(default_example_bytes, b"requests: 20000", b"requests: 3:20")
    with pytest.raises(
        PacketError, match=r"inputs.workload.requests: expected a number, got '3:20'"
    ):
        parse_packet(raw, "x.yaml")


def test_exponent_without_dot_is_a_number(default_example_bytes: bytes) -> None:
    raw = _with(default_example_bytes, b"requests: 20000", b"requests: 2e4")
    with pytest.raises(PacketError, match="whole number"):  # 2e4 is a float: not a count
        parse_packet(raw, "x.yaml")
    raw = _with(default_example_bytes, b"rate_per_s: 250.0", b"rate_per_s: 2.5e2")
    assert parse_packet(raw).packet.inputs.workload.arrivals.rate_per_s == 250.0


def test_every_problem_is_reported_at_once(default_example_bytes: bytes) -> None:
    raw = _with(default_example_bytes, b"rate_per_s: 250.0", b"rate_per_s: -1")
    raw = _with(raw, b"max_batch: 8", b"max_batch: 0")
    with pytest.raises(PacketError) as info:
        parse_packet(raw, "x.yaml")
    paths = [p.path for p in info.value.problems]
    assert ("inputs", "workload", "arrivals", "rate_per_s") in paths
    assert ("baseline", "batch_policy", "max_batch") in paths
