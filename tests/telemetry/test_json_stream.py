"""The streaming scan: pieces cut only where tokens end, strings told from structure exactly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from model.telemetry.json_stream import _outside_strings, pieces

TEXT = st.text(alphabet=st.sampled_from(list('ab"\\[]{},: 0123456789\n\té')), max_size=12)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.floats(allow_nan=False,
    allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


def _reference_outside(data: bytes) -> np.ndarray:
    """Byte-by-byte: True outside strings (quotes count as inside)."""
    out, inside, escaped = np.ones(len(data), bool), False, False
    for i, byte in enumerate(data):
        if inside:
            out[i] = False
            if escaped:
                escaped = False
            elif byte == 92:
                escaped = True
            elif byte == 34:
                inside = False
        elif byte == 34:
            inside, out[i] = True, False
    return out


@settings(max_examples=200, deadline=None)
@given(VALUES, st.sampled_from([None, 1]))
def test_outside_strings_matches_a_byte_by_byte_scan(value, indent) -> None:
    data = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    buf = np.frombuffer(data, np.uint8)
    assert np.array_equal(_outside_strings(buf), _reference_outside(data))


@settings(max_examples=100, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=8), st.integers(1, 64), st.sampled_from([None, 2]))
def test_pieces_rebuild_the_file_and_cut_between_tokens(tmp_path_factory, events, chunk, indent):
    data = json.dumps(events, indent=indent, ensure_ascii=False).encode()
    path = Path(tmp_path_factory.mktemp("s")) / "t.json"
    path.write_bytes(data)
    got = list(pieces(str(path), 10**6, chunk_bytes=chunk))
    assert b"".join(p.data for p in got) == data
    assert [p.line for p in got] == [
        1 + b"".join(p.data for p in got[:i]).count(b"\n") for i in range(len(got))
    ]
    assert got[-1].depth_after == 0
    for piece in got[:-1]:  # every cut is just after a byte that ends a token outside strings
        assert piece.data[-1:] in [bytes([c]) for c in b",:[]{} \t\r\n"]
