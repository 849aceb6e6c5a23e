"""A corpus of bad kernel-telemetry files: each gives its exact error or exact exclusions."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from model.telemetry import TelemetryError, read_kernel_telemetry

HEADER = "op,dtype,m,n,k,latency_us\n"
GOOD = "gemm,bf16,64,64,64,5.5\n"

# (file name, content, error after "PATH")
ERRORS = [
    ("empty.csv", b"", ": empty file"),
    ("blank.csv", b"  \n\n", ": empty file"),
    ("header.csv", HEADER, ": header only, no data rows"),
    ("no_rows.ndjson", "\n\n", ": empty file"),
    (
        "non_utf8.csv",
        HEADER.encode() + GOOD.encode() + b"gemm,b\xfff16,1,2,3,4\n",
        ":3: not UTF-8 text (byte 0xff at offset 55)",
    ),
    (
        "binary.csv",
        b"op,dtype\n\x00\x01\x02garbage",
        ":2: NUL byte at offset 9: binary data, not text",
    ),
    ("zipped.csv", gzip.compress(b"op\n"), ": gzip-compressed; decompress it first"),
    ("corrupt.parquet", b"PAR1 this is not really parquet", None),  # message from the library
    (
        "no_time.csv",
        "op,dtype,m,n,k\ngemm,bf16,1,2,3\n",
        ": no time column (expected latency_{s,ms,us,ns}, duration_{s,ms,us,ns}, "
        "dur_{s,ms,us,ns}, ...); columns found: op, dtype, m, n, k",
    ),
    (
        "no_unit.csv",
        "op,dtype,m,n,k,latency\ngemm,bf16,1,2,3,4\n",
        ": latency: time column without a unit; rename it latency_us, latency_ms, latency_ns "
        "or latency_s",
    ),
    (
        "two_times.csv",
        "op,dtype,m,n,k,latency_ms,duration_ns\ngemm,bf16,1,2,3,4,5\n",
        ": latency_us: several time columns (latency_ms, duration_ns); keep one",
    ),
    (
        "no_op.csv",
        "dtype,m,n,k,latency_us\nbf16,1,2,3,4\n",
        ": op: column missing (columns found: dtype, m, n, k, latency_us)",
    ),
    (
        "no_k.csv",
        "op,dtype,m,n,latency_us\ngemm,bf16,1,2,4\n",
        ": k: column missing; gemm rows need m, n, k (columns found: op, dtype, m, n, latency_us)",
    ),
    (
        "dup_column.csv",
        "op,dtype,M,m,n,k,latency_us\ngemm,bf16,1,1,2,3,4\n",
        ":1: m: duplicate column name (also 'M')",
    ),
    (
        "unbalanced_quote.csv",
        HEADER + 'gemm,"bf16,1,2,3,4\n' + GOOD,
        ":2: unbalanced quote: a quoted field never closes",
    ),
    (
        "pretty.json",
        '{\n  "op": "gemm",\n  "latency_us": 3\n}\n',
        ": one JSON object (keys: op, latency_us), expected one JSON object per line (NDJSON) "
        "or a JSON array of row objects",
    ),
    ("scalar.json", "[1, 2", ": invalid JSON: Expecting ',' delimiter"),
    (
        "nested.ndjson",
        '{"op":"gemm","dtype":"bf16","m":[1],"n":2,"k":3,"latency_us":4}\n',
        ": m: holds JSON lists/objects; expected plain values",
    ),
    (
        "all_bad.csv",
        HEADER + "gemm,bf16,1,2,3,-4\ngemm,bf16,1,2,3,nan\n",
        ": all 2 rows excluded (nonfinite_latency 1, nonpositive_latency 1); "
        "first: {path}:3: latency_us: NaN or infinite ('nan')",
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), ERRORS, ids=[e[0] for e in ERRORS])
def test_unusable_files_raise_one_line_errors(name, content, expected, write) -> None:
    path = write(name, content)
    with pytest.raises(TelemetryError) as caught:
        read_kernel_telemetry(path)
    message = str(caught.value)
    assert "\n" not in message
    if expected is None:
        assert message.startswith(f"{path}: not a readable Parquet file: ")
    elif name == "all_bad.csv":
        assert message == f"{path}" + expected.format(path=path)
    elif name == "scalar.json":
        assert message.startswith(f"{path}:1{expected}")
    else:
        assert message == f"{path}{expected}"


def test_bad_rows_are_counted_by_reason_with_lines(write) -> None:
    rows = [
        "gemm,bf16,1,2,3,-4.0",  # 2 nonpositive
        "gemm,bf16,1,2,3,nan",  # 3 nonfinite
        "gemm,bf16,1,2,3,inf",  # 4 nonfinite
        "gemm,bf16,0,2,3,1",  # 5 bad_shape
        "gemm,bf16,1.5,2,3,1",  # 6 bad_shape
        "gemm,bf16,,2,3,1",  # 7 missing_shape
        "conv,bf16,1,2,3,1",  # 8 unknown_op
        "gemm,xx,1,2,3,1",  # 9 unknown_dtype
        "gemm,bf16,1,2,3,abc",  # 10 missing_latency
        "gemm,bf16,1,2,3,0",  # 11 nonpositive
        "gemm,bf16,1,2,3",  # 12 malformed (5 fields)
        "gemm,bf16,1,2,3,7,8",  # 13 malformed (7 fields)
        "gemm,bf16,1,2,3,7",  # 14 kept
        "gemm,bf16,1,2,3,7",  # 15 duplicate of 14
        "GEMM,BFloat16,1,2,3,8",  # 16 kept: case and dtype alias
    ]
    path = write("mixed.csv", HEADER + "\n".join(rows) + "\n")
    tel = read_kernel_telemetry(path)
    assert tel.report.counts == {
        "malformed_row": 2,
        "unknown_op": 1,
        "unknown_dtype": 1,
        "missing_shape": 1,
        "bad_shape": 2,
        "missing_latency": 1,
        "nonfinite_latency": 2,
        "nonpositive_latency": 2,
        "duplicate": 1,
    }
    assert tel.frame["latency_us"].to_list() == [7.0, 8.0]
    assert tel.provenance.line.tolist() == [14, 16]
    shown = {
        e.reason: [str(r).removeprefix(f"{path}:") for r in e.examples]
        for e in tel.report.exclusions
    }
    assert shown["malformed_row"] == [
        "12: 5 fields, the header has 6",
        "13: 7 fields, the header has 6",
    ]
    assert shown["bad_shape"] == [
        "5: m: not a whole number >= 1 ('0')",
        "6: m: not a whole number >= 1 ('1.5')",
    ]
    assert shown["missing_shape"] == ["7: m: gemm rows need it (empty)"]
    assert shown["unknown_op"] == ["8: op: unknown op ('conv')"]
    assert shown["duplicate"] == [f"15: same values as {path}:14"]
    assert tel.report.rows_read == 15 and tel.report.rows_kept == 2


def test_shape_rules_per_op(write) -> None:
    header = "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,kind,rows,cols,latency_us\n"
    rows = [
        "attention_decode,bf16,,,,8,1,100,32,8,128,,,,20",  # 2 kept
        "attention_decode,bf16,,,,8,1,100,32,5,128,,,,20",  # 3 heads % kv_heads
        "attention_prefill,bf16,,,,8,64,64,32,8,,,,,20",  # 4 missing head_dim
        "gemm,bf16,8,8,8,,4,,,,,,,,20",  # 5 q_len set on gemm
        "elementwise,bf16,,,,,,,,,,rmsnorm,16,4096,3",  # 6 kept
        "elementwise,bf16,,,,,,,,,,softmax,16,4096,3",  # 7 unknown kind
        "elementwise,bf16,,,,,,,,,,,16,4096,3",  # 8 missing kind
        "elementwise,bf16,NA,,,,,,,,,silu_and_mul,16,4096,3",  # 9 kept: NA is empty, alias
        "gemm,bf16,8,8,8,4,,,,,,,,,20",  # 10 kept: a batched GEMM (batch is optional on gemm)
        "gemm,bf16,8,8,8,0,,,,,,,,,20",  # 11 batch must be a whole number >= 1
    ]
    tel = read_kernel_telemetry(write("ops.csv", header + "\n".join(rows) + "\n"))
    assert tel.report.counts == {
        "missing_shape": 2,
        "bad_shape": 2,
        "unknown_kind": 1,
        "foreign_shape": 1,
    }
    assert tel.provenance.line.tolist() == [2, 6, 9, 10]
    assert tel.frame["kind"].cast(pl.String).to_list() == [None, "rmsnorm", "silu_mul", None]
    assert tel.frame["batch"].to_list()[-1] == 4
    reasons = {e.reason: str(e.examples[0]).split(": ", 1)[1] for e in tel.report.exclusions}
    assert reasons["bad_shape"] == "kv_heads: heads is not a multiple of kv_heads ('5')"
    assert reasons["foreign_shape"] == "q_len: set, but this row's op does not use it ('4')"


@pytest.mark.parametrize(
    ("column", "value", "expected_us"),
    [
        ("latency_ms", "0.0055", 5.5),
        ("latency_ns", "5500", 5.5),
        ("duration_us", "5.5", 5.5),
        ("Latency (s)", "5.5e-6", 5.5),
        ("kernel_time_usec", "5.5", 5.5),
    ],
)
def test_time_units_are_converted_and_reported(column, value, expected_us, write) -> None:
    path = write("t.csv", f"op,dtype,m,n,k,{column}\ngemm,bf16,64,64,64,{value}\n")
    tel = read_kernel_telemetry(path)
    assert tel.frame["latency_us"][0] == pytest.approx(expected_us, rel=1e-12)
    normalized = column.lower().replace(" (", "_").rstrip(")")
    if normalized == "latency_us":
        assert tel.conversions == (f"{path}: latency_us used as is",)
    else:
        assert tel.conversions[0].startswith(f"{path}: {normalized} -> latency_us (x")


def test_ms_values_labelled_us_are_warned_and_flagged(write) -> None:
    """Milliseconds written under latency_us: the file-level warning fires, and the rows fall
    below any physical minimum, so flagging removes them."""
    rows = "".join(f"gemm,bf16,4096,4096,4096,{0.6 + i / 100}\n" for i in range(5))
    path = write("ms_as_us.csv", HEADER + rows)
    tel = read_kernel_telemetry(path, hardware="a100-sxm")
    assert tel.warnings == (
        f"{path}: median kernel time 0.62 us is below the ~1 us launch floor: is latency_us "
        "really in the unit its name says?",
    )
    flops = 2 * 4096**3
    min_time_us = np.full(5, flops / 312e12 * 1e6)  # A100 dense bf16 peak, 312 TFLOP/s
    cleaned = tel.flag_implausible(min_time_us)
    assert cleaned.report.counts == {"implausible": 5}
    assert cleaned.frame.height == 0


def test_extension_that_lies_is_read_by_content(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"op": ["gemm"], "dtype": ["bf16"], "m": [1], "n": [2], "k": [3], "latency_us": [4.0]}
    )
    frame.write_parquet(tmp_path / "really_parquet.csv")
    (tmp_path / "really_csv.parquet").write_text(HEADER + GOOD)
    (tmp_path / "really_ndjson.csv").write_text(json.dumps(frame.to_dicts()[0]) + "\n")
    for name, content in [
        ("really_parquet.csv", "parquet"),
        ("really_csv.parquet", "csv"),
        ("really_ndjson.csv", "ndjson"),
    ]:
        tel = read_kernel_telemetry(tmp_path / name, hardware="x")
        claimed = Path(name).suffix.lstrip(".")
        assert tel.warnings == (
            f"{tmp_path / name}: extension says {claimed} but the content is {content}",
        )
        assert tel.frame.height == 1


def test_ndjson_with_python_nan_and_bad_lines(write) -> None:
    lines = [
        '{"op":"gemm","dtype":"bf16","m":1,"n":2,"k":3,"latency_us":4}',
        "",
        '{"op":"gemm","dtype":"bf16","m":1,"n":2,"k":3,"latency_us":NaN}',
        "[1, 2]",
        '{"op":"gemm","dtype":"bf16","m":1,"n":2,"k":3,"latency_us":5',
        '{"op":"gemm","dtype":"bf16","m":"7","n":2,"k":3,"latency_us":"6"}',
    ]
    path = write("t.ndjson", "\n".join(lines) + "\n")
    tel = read_kernel_telemetry(path, hardware="x")
    assert tel.report.counts == {"malformed_row": 2, "nonfinite_latency": 1}
    assert tel.provenance.line.tolist() == [1, 6]
    assert tel.frame["m"].to_list() == [1, 7]
    notes = [str(r) for r in tel.report.exclusions[0].examples]
    assert notes == [
        f"{path}:4: expected a JSON object, found an array",
        f"{path}:5: invalid JSON: Expecting ',' delimiter at column 61",
    ]


def test_defaults_fill_absent_columns(write) -> None:
    path = write("bare.csv", "op,m,n,k,latency_us\ngemm,1,2,3,4\n")
    with pytest.raises(TelemetryError, match=r"dtype: column missing"):
        read_kernel_telemetry(path)
    tel = read_kernel_telemetry(path, dtype="bfloat16", hardware="h100-sxm")
    row = tel.frame.row(0, named=True)
    assert (row["dtype"], row["hardware"], row["source"]) == ("bf16", "h100-sxm", "bare.csv")
    with pytest.raises(ValueError, match="dtype='fp12'"):
        read_kernel_telemetry(path, dtype="fp12")


def test_duplicates_across_files_keep_the_first(write) -> None:
    a = write("a.csv", HEADER + GOOD + "gemm,bf16,1,2,3,9\n")
    b = write("b.csv", HEADER + GOOD)
    tel = read_kernel_telemetry([a, b], source="same")
    assert tel.report.counts == {"duplicate": 1}
    assert str(tel.report.exclusions[0].examples[0]) == f"{b}:2: same values as {a}:2"
    assert tel.provenance.where(0) == f"{a}:2"


@pytest.mark.slow
def test_million_row_file_with_corruptions(tmp_path: Path) -> None:
    """10^6 rows: corruptions near the end are found with their exact lines."""
    n = 1_000_000
    rng = np.random.default_rng(3)
    latency: list[str | None] = np.round(rng.uniform(3.0, 900.0, n), 3).astype(str).tolist()
    bad = {999_990: "-1", 999_991: "nan", 999_992: None, 500_000: "0"}
    for row, value in bad.items():
        latency[row] = value
    frame = pl.DataFrame(
        {
            "op": ["gemm"] * n,
            "dtype": ["bf16"] * n,
            "m": rng.integers(1, 8192, n),
            "n": rng.integers(1, 8192, n),
            "k": rng.integers(1, 8192, n),
            "latency_us": latency,
        }
    )
    path = tmp_path / "big.csv"
    frame.write_csv(path)
    with path.open("a") as fh:
        fh.write("gemm,bf16,1,2\n")  # a truncated last line
    tel = read_kernel_telemetry(path, hardware="x")
    assert tel.frame.height == n - 4
    assert tel.report.counts == {
        "malformed_row": 1,
        "missing_latency": 1,
        "nonfinite_latency": 1,
        "nonpositive_latency": 2,
    }
    lines = {e.reason: [r.line for r in e.examples] for e in tel.report.exclusions}
    assert lines == {
        "malformed_row": [n + 2],
        "missing_latency": [999_994],
        "nonfinite_latency": [999_993],
        "nonpositive_latency": [500_002, 999_992],
    }


def test_spreadsheet_export(write) -> None:
    """Excel-style: BOM, semicolons, CRLF, a unit in parentheses, padded cells. Decimal commas
    are not numbers (a locale guess could silently scale values), so that row is excluded."""
    content = (
        "\ufeffOp;DType;M;N;K;Latency (ms)\r\ngemm; bf16 ;1;2;3; 0.5 \r\ngemm;bf16;1;2;3;0,5\r\n"
    )
    path = write("export.csv", content.encode("utf-8"))
    tel = read_kernel_telemetry(path, hardware="x")
    assert tel.frame.select("dtype", "m", "latency_us").rows() == [("bf16", 1, 500.0)]
    assert tel.conversions == (f"{path}: latency_ms -> latency_us (x1000)",)
    assert [str(r) for r in tel.report.exclusions[0].examples] == [
        f"{path}:3: Latency (ms): empty or not a number ('0,5')"
    ]
