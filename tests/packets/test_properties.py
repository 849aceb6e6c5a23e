"""Property tests: canonical writing is a fixed point; random damage only ever raises PacketError."""

from __future__ import annotations

import math
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from packets.dump import dump_packet
from packets.errors import PacketError
from packets.load import LoadedPacket, parse_packet
from packets.safe_text import first_unsafe
from packets.schema import (
    MAX_MS,
    MAX_RATE_PER_S,
    MAX_SEQ_LEN,
    MAX_WINDOW_S,
    MIN_MS,
    MIN_RATE_PER_S,
    Packet,
    RollbackTrigger,
)

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
# Any character packet text may hold (control, bidi and line-separator characters are refused:
# tests/packets/test_input_safety.py).
text = st.text(
    st.characters(blacklist_categories=("Cs",)).filter(lambda c: first_unsafe(c) is None),
    min_size=1,
    max_size=60,
)
rate = st.floats(min_value=MIN_RATE_PER_S, max_value=MAX_RATE_PER_S)
p95_ms = st.floats(min_value=MIN_MS, max_value=MAX_MS / 10)
window_s = st.floats(min_value=1e-300, max_value=MAX_WINDOW_S)


@st.composite
def weights(draw: st.DrawFn, n: int) -> list[float]:
    raw = draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n))
    total = math.fsum(raw)
    return [w / total for w in raw]


@st.composite
def edited_packets(draw: st.DrawFn, base: Packet) -> Packet:
    """The default example with its free text, numbers and mixes replaced by drawn values."""
    inputs = base.inputs
    n = draw(st.integers(1, 6))
    values = sorted(draw(st.sets(st.integers(1, MAX_SEQ_LEN), min_size=n, max_size=n)))
    p95 = draw(p95_ms)
    mix = inputs.workload.shapes.seq_len.model_copy(
        update={"values": values, "weights": draw(weights(n))}
    )
    workload = inputs.workload.model_copy(
        update={
            "shapes": inputs.workload.shapes.model_copy(update={"seq_len": mix}),
            "requests": draw(st.integers(1000, 10_000_000)),
            "arrivals": inputs.workload.arrivals.model_copy(update={"rate_per_s": draw(rate)}),
        }
    )
    sla = inputs.sla.model_copy(update={"p95_ms": p95, "p99_ms": p95 * draw(st.floats(1, 10))})
    metadata = inputs.metadata.model_copy(
        update={"compiler": draw(text), "firmware": draw(text), "model_revision": draw(text)}
    )
    new_inputs = inputs.model_copy(update={"workload": workload, "sla": sla, "metadata": metadata})
    return base.model_copy(
        update={
            "title": draw(text),
            "anchor_metric": draw(text),
            "seed": draw(st.integers(0, 2**63 - 1)),
            "inputs": new_inputs,
            "outputs": base.outputs.model_copy(
                update={"rollback_triggers": draw(st.lists(triggers(), max_size=3))}
            ),
        }
    )


@st.composite
def triggers(draw: st.DrawFn) -> RollbackTrigger:
    return RollbackTrigger(
        metric=draw(text),
        comparison=draw(st.sampled_from([">", "<"])),
        threshold=draw(st.floats(allow_nan=False, allow_infinity=False)),
        window_s=draw(window_s),
        action=draw(text),
        derived_from=draw(text),
    )


@SETTINGS
@given(data=st.data())
def test_canonical_dump_is_a_fixed_point(default_loaded: LoadedPacket, data: st.DataObject) -> None:
    packet = data.draw(edited_packets(default_loaded.packet))
    once = dump_packet(packet)
    reread = parse_packet(once, "round-trip.yaml").packet
    assert dump_packet(reread) == once
    assert reread.seed == packet.seed and reread.title == packet.title
    assert reread.inputs.workload.arrivals.rate_per_s == packet.inputs.workload.arrivals.rate_per_s


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(root: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    if new is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return root


_DELETE = object()
junk_values = st.one_of(
    st.just(_DELETE),
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def _only_packet_errors(raw: bytes) -> None:
    try:
        parse_packet(raw, "mutant.yaml")
    except PacketError as exc:
        assert all(str(p) for p in exc.problems)


@SETTINGS
@given(data=st.data())
def test_structural_mutations_raise_only_packet_errors(
    default_example_bytes: bytes, data: st.DataObject
) -> None:
    tree = yaml.safe_load(default_example_bytes)
    for _ in range(data.draw(st.integers(1, 4))):
        paths = [p for p in _paths(tree) if p]
        path = data.draw(st.sampled_from(paths))
        tree = _set(tree, path, data.draw(junk_values))
    _only_packet_errors(yaml.safe_dump(tree, allow_unicode=True).encode())


@SETTINGS
@given(data=st.data())
def test_byte_mutations_raise_only_packet_errors(
    default_example_bytes: bytes, data: st.DataObject
) -> None:
    raw = bytearray(default_example_bytes)
    for _ in range(data.draw(st.integers(1, 8))):
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "line"]))
        at = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=12))
        elif kind == "delete":
            del raw[at : at + data.draw(st.integers(1, 40))]
        else:
            lines = bytes(raw).split(b"\n")
            del lines[at % len(lines)]
            raw = bytearray(b"\n".join(lines))
    _only_packet_errors(bytes(raw))


def test_keys_that_look_like_internal_markers_are_named_in_place(
    default_example_bytes: bytes,
) -> None:
    """Union tags ('~name') and dict-key markers ('[key]') are dropped from pydantic's error
    paths; a user's own key spelled that way must still be reported where it is (a byte flip
    turning a '#' comment into '~ The question: ...' once crashed the error formatter)."""
    raw = default_example_bytes.replace(b"\nseed:", b"\n~ note: x\nseed:", 1)
    raw = raw.replace(b"      process: poisson\n", b"      process: poisson\n      '[key]': 1\n", 1)
    try:
        parse_packet(raw, "mutant.yaml")
    except PacketError as exc:
        found = {
            (p.line, ".".join(map(str, p.path)), p.message.split(";")[0]) for p in exc.problems
        }
    else:
        raise AssertionError("unknown keys were accepted")
    lines = raw.decode().splitlines()
    assert (
        lines.index("~ note: x") + 1,
        "~ note",
        "unknown field '~ note'",
    ) in found
    assert (
        lines.index("      '[key]': 1") + 1,
        "inputs.workload.arrivals.[key]",
        "unknown field '[key]'",
    ) in found
