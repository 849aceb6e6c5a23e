"""Property tests: corrupted telemetry is excluded for the right reason or refused with a
TelemetryError, never any other exception."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.telemetry import (
    KERNEL_SCHEMA,
    TelemetryError,
    read_chrome_trace,
    read_kernel_telemetry,
    read_request_telemetry,
)
from model.telemetry.vocab import OP_SHAPE_COLUMNS, OPTIONAL_SHAPE_COLUMNS, SHAPE_COLUMNS

COLUMNS = ["op", "dtype", *SHAPE_COLUMNS, "latency_us"]
BASE = {
    "gemm": {"m": "64", "n": "128", "k": "256"},
    "attention_prefill": {
        "batch": "2",
        "q_len": "512",
        "kv_len": "512",
        "heads": "32",
        "kv_heads": "8",
        "head_dim": "128",
    },
    "attention_decode": {
        "batch": "8",
        "q_len": "1",
        "kv_len": "900",
        "heads": "32",
        "kv_heads": "8",
        "head_dim": "128",
    },
    "elementwise": {"kind": "rmsnorm", "rows": "16", "cols": "4096"},
}
ROWS = [op for op in BASE for _ in range(3)]  # 12 distinct rows (latencies differ)

JUNK = ["abc", "1,5", 'x"y', "2\n3", "\u00e9t\u00e9"]
# value -> reason when written into that kind of column (None: still valid)
OP_VALUES = {
    "": "unknown_op",
    "NA": "unknown_op",
    "conv": "unknown_op",
    **dict.fromkeys(JUNK, "unknown_op"),
}
DTYPE_VALUES = {"": "unknown_dtype", "fp12": "unknown_dtype", "BF16": None, "float16": None}
NEEDED_INT = {
    **dict.fromkeys(["", "NA", "nan", "null"], "missing_shape"),
    **dict.fromkeys(["0", "-3", "1.5", "inf", "1e300", *JUNK], "bad_shape"),
    "16.0": None,
}
NEEDED_KIND = {
    "": "missing_shape",
    "softmax": "unknown_kind",
    "RMS_NORM": None,
    "silu_and_mul": None,
}
FOREIGN = {"5": "foreign_shape", "abc": "foreign_shape", "NA": None, "": None}
OPTIONAL_INT = {  # an optional shape (batch on a gemm row): empty is fine, a bad number is not
    **dict.fromkeys(["", "NA", "5", "16.0"], None),
    **dict.fromkeys(["0", "-3", "1.5", "abc"], "bad_shape"),
}
LATENCY = {
    **dict.fromkeys(["", "NA", *JUNK], "missing_latency"),
    **dict.fromkeys(["nan", "inf", "-inf", "1e400"], "nonfinite_latency"),
    **dict.fromkeys(["0", "-0.5"], "nonpositive_latency"),
    "0.001": None,
}


def choices_for(op: str, column: str) -> dict[str, str | None]:
    """Corrupt values for one cell and the reason each must be excluded for."""
    if column == "op":
        return OP_VALUES
    if column == "dtype":
        return DTYPE_VALUES
    if column == "latency_us":
        return LATENCY
    if column in OPTIONAL_SHAPE_COLUMNS.get(op, ()):
        return OPTIONAL_INT
    if column not in OP_SHAPE_COLUMNS[op]:
        return FOREIGN
    return NEEDED_KIND if column == "kind" else NEEDED_INT


@st.composite
def corruptions(draw) -> dict[int, tuple[str, str, str | None]]:
    """At most one corrupted cell per row: row -> (column, value, expected reason)."""
    rows = draw(st.sets(st.integers(0, len(ROWS) - 1), max_size=len(ROWS)))
    out = {}
    for row in sorted(rows):
        column = draw(st.sampled_from(COLUMNS))
        table = choices_for(ROWS[row], column)
        value = draw(st.sampled_from(sorted(table)))
        out[row] = (column, value, table[value])
    return out


def write_csv(path: Path, cells: list[dict[str, str]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cells)
    path.write_text(buffer.getvalue(), encoding="utf-8")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corruptions())
def test_cell_corruptions_get_their_reason(corrupt: dict[int, tuple[str, str, str | None]]) -> None:
    cells = []
    for i, op in enumerate(ROWS):
        cell = dict.fromkeys(COLUMNS, "")
        cell.update(op=op, dtype="bf16", latency_us=f"{10 + i}.5", **BASE[op])
        if i in corrupt:
            column, value, reason = corrupt[i]
            # a valid new latency must stay distinct per row, or the rows become duplicates
            cell[column] = f"{value}{i:02d}" if column == "latency_us" and reason is None else value
        cells.append(cell)
    expected = Counter(reason for _, _, reason in corrupt.values() if reason is not None)
    kept = len(ROWS) - sum(expected.values())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "k.csv"
        write_csv(path, cells)
        if kept == 0:
            try:
                read_kernel_telemetry(path, hardware="x")
            except TelemetryError as err:
                assert str(err).startswith(f"{path}: all {len(ROWS)} rows excluded (")
                return
            raise AssertionError("every row is bad, yet no TelemetryError")
        tel = read_kernel_telemetry(path, hardware="x")
    assert Counter(tel.report.counts) == expected
    assert tel.frame.height == kept
    assert tel.frame.schema == pl.Schema(KERNEL_SCHEMA)
    # a quoted cell holding a newline makes its record span two lines
    starts = 2 + np.cumsum([0] + [sum(v.count("\n") for v in c.values()) + 1 for c in cells])
    bad_lines = {int(starts[i]) for i, (_, _, reason) in corrupt.items() if reason is not None}
    assert (
        set(tel.provenance.line.tolist()) == {int(starts[i]) for i in range(len(ROWS))} - bad_lines
    )
    examples = {r.line for e in tel.report.exclusions for r in e.examples}
    assert examples <= bad_lines


def _valid_csv() -> bytes:
    cells = []
    for i, op in enumerate(ROWS):
        cell = dict.fromkeys(COLUMNS, "")
        cell.update(op=op, dtype="bf16", latency_us=f"{10 + i}.5", **BASE[op])
        cells.append(cell)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(cells)
    return buffer.getvalue().encode()


VALID_CSV = _valid_csv()
VALID_NDJSON = b"".join(
    json.dumps({k: v for k, v in row.items() if v is not None}).encode() + b"\n"
    for row in pl.read_csv(io.BytesIO(VALID_CSV), infer_schema=False).to_dicts()
)


@st.composite
def byte_edits(draw, base: bytes) -> bytes:
    """The base bytes with a few random insertions, deletions and overwrites."""
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 6))):
        pos = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["insert", "delete", "overwrite"]))
        chunk = draw(
            st.binary(min_size=1, max_size=4)
            | st.sampled_from([b",", b"\n", b'"', b"{", b"]", b"nan", b"-"])
        )
        if action == "insert":
            data[pos:pos] = chunk
        elif action == "delete":
            del data[pos : pos + len(chunk)]
        else:
            data[pos : pos + len(chunk)] = chunk
    return bytes(data)


def _read_or_refuse(reader, path: Path):
    """The reader either refuses with a one-line TelemetryError (-> None) or returns a result
    whose counts add up."""
    try:
        result = reader(path)
    except TelemetryError as err:
        assert "\n" not in str(err)
        return None
    report = result.report
    assert report.rows_read == report.rows_kept + report.excluded
    assert report.rows_kept == result.frame.height > 0
    assert len(result.provenance.line) == result.frame.height
    return result


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_byte_corruptions_never_crash(data) -> None:
    fmt = data.draw(st.sampled_from(["csv", "ndjson"]))
    content = data.draw(byte_edits(VALID_CSV if fmt == "csv" else VALID_NDJSON))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"k.{fmt}"
        path.write_bytes(content)
        _read_or_refuse(read_request_telemetry, path)
        result = _read_or_refuse(lambda p: read_kernel_telemetry(p, hardware="x"), path)
        if result is not None:
            latency = result.frame["latency_us"].to_numpy()
            assert np.all(np.isfinite(latency)) and np.all(latency > 0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
events = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "M", "B"]),
        "cat": st.sampled_from(["kernel", "cpu_op", "Kernel", ""]),
    },
    optional={
        "name": json_values,
        "dur": json_values,
        "ts": json_values,
        "args": json_values,
        "pid": json_values,
        "tid": json_values,
    },
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events | json_values, max_size=12), st.booleans())
def test_odd_trace_events_never_crash(trace_events: list, wrapped: bool) -> None:
    document = {"traceEvents": trace_events} if wrapped else trace_events
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.json"
        path.write_text(json.dumps(document))
        try:
            trace = read_chrome_trace(path)
        except TelemetryError as err:
            assert "\n" not in str(err)
            return
    assert trace.report.rows_kept == trace.kernels.height > 0
    assert (trace.kernels["dur_us"] > 0).all()
