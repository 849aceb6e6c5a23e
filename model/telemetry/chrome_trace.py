"""Chrome trace-event JSON (PyTorch profiler, Perfetto/TensorBoard exports): device kernels.

Which events are device kernels: complete events (`ph == "X"`) that either have category
`kernel` (PyTorch profiler / Kineto; older versions wrote `Kernel`), or, with no host category,
sit on a device stream track: their process is named after a device (`GPU`, `/device:`, `TPU`,
`NPU`, `XPU`) and their thread after a stream (`process_name`/`thread_name` metadata events), as
in TensorBoard/XLA and Perfetto-converted traces. Memory copies/sets (`gpu_memcpy`,
`gpu_memset`) and host events are not kernels; they are counted by category in `skipped`.

Durations (`dur`) and timestamps (`ts`) are microseconds, as the trace-event format defines them
(`displayTimeUnit` only changes how viewers display them). Kernel names map to ops by
`kernel_names.NAME_RULES`; GEMM kernels get m/n/k from their launching CPU op's `Input Dims`
(`op_shapes.gemm_shape`) when the profiler recorded shapes.

The file is parsed whole with the stdlib json module (gzip is read transparently); files over
`MAX_TRACE_BYTES` of JSON text are refused with a clear error rather than exhausting memory.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from model.telemetry.errors import (
    MAX_EXAMPLES,
    ExclusionReport,
    RowRef,
    TelemetryError,
    build_report,
    raise_if_nothing_kept,
)
from model.telemetry.kernel_names import map_kernel_names
from model.telemetry.op_shapes import gemm_shape
from model.telemetry.raw import check_text
from model.telemetry.vocab import KIND_DTYPE

MAX_TRACE_BYTES = 256 * 2**20
"""Largest trace accepted, bytes of JSON text after decompression: json.loads needs several
times the text size in memory."""

KERNEL_CATEGORIES = ("kernel",)
"""Event categories (lower case) that are device kernels."""

HOST_CATEGORIES = (
    "cpu_op",
    "operator",
    "cuda_runtime",
    "cuda_driver",
    "python_function",
    "user_annotation",
    "gpu_user_annotation",
    "gpu_memcpy",
    "gpu_memset",
    "memcpy",
    "memset",
    "ac2g",
    "trace",
    "overhead",
)
"""Event categories (lower case) that are never device kernels, even on a device track."""

DEVICE_PROCESS = re.compile(r"gpu|/device:|tpu|npu|xpu", re.IGNORECASE)
STREAM_THREAD = re.compile(r"stream", re.IGNORECASE)

TRACE_OPS = ("gemm", "attention", "elementwise")
"""Ops a kernel name can reveal (prefill vs decode is not in a name: use q_len elsewhere)."""

TRACE_SCHEMA: dict[str, pl.DataType] = {
    "event": pl.Int64,
    "name": pl.String,
    "op": pl.Enum(TRACE_OPS),
    "kind": KIND_DTYPE,
    "ts_us": pl.Float64,
    "dur_us": pl.Float64,
    "pid": pl.String,
    "tid": pl.String,
    "stream": pl.Int64,
    "grid": pl.List(pl.Int64),
    "block": pl.List(pl.Int64),
    "cpu_op": pl.String,
    "input_dims": pl.String,
    "m": pl.Int64,
    "n": pl.Int64,
    "k": pl.Int64,
    "batch": pl.Int64,
}
"""Kernel rows of a trace: index of the event in the trace, kernel name, mapped op/kind (null when
unmapped), start and duration (us), process/thread ids as text, stream, launch grid/block, the
launching CPU op and its input dims (JSON text) where recorded, and GEMM m/n/k/batch where the
input dims give them."""

TRACE_REASONS = {
    "missing_duration": "dur missing or not a number",
    "nonfinite_duration": "dur NaN or infinite",
    "nonpositive_duration": "dur zero or negative",
}
"""Reasons a device-kernel event is excluded."""


@dataclass(frozen=True, eq=False)
class ChromeTrace:
    """Device kernels of one trace file.

    Attributes:
        file: the trace file.
        kernels: kept kernel events, columns of `TRACE_SCHEMA`, in trace order.
        unmapped: kernels whose name maps to no op: `name`, `count`, `total_us`, most time first.
        skipped: complete events that are not device kernels, counted by category.
        report: kernel events read, kept and excluded (bad `dur`), rows being event indices.
        warnings: one-line notes (events that are not objects, a missing closing bracket...).
    """

    file: str
    kernels: pl.DataFrame
    unmapped: pl.DataFrame
    skipped: dict[str, int]
    report: ExclusionReport
    warnings: tuple[str, ...]


def _load_bytes(path: str, max_bytes: int) -> bytes:
    try:
        with open(path, "rb") as fh:
            zipped = fh.read(2) == b"\x1f\x8b"
        opener = gzip.open if zipped else open
        with opener(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except (OSError, EOFError) as exc:
        raise TelemetryError(path, f"cannot read trace: {exc}") from None
    if len(data) > max_bytes:
        raise TelemetryError(
            path,
            f"trace has more than {max_bytes} bytes of JSON (the limit, max_bytes); "
            "trim it or raise the limit if memory allows (json needs several times the size)",
        )
    if not data.strip():
        raise TelemetryError(path, "empty file")
    check_text(path, data)
    return data


def _parse(path: str, data: bytes) -> tuple[object, list[str]]:
    text = data.decode("utf-8-sig")
    try:
        return json.loads(text), []
    except json.JSONDecodeError as exc:
        # The trace-event format lets the JSON-array form end without its closing bracket.
        stripped = text.rstrip().rstrip(",")
        if stripped.lstrip().startswith("[") and not stripped.endswith("]"):
            try:
                return json.loads(stripped + "]"), [f"{path}: array without closing ']' (allowed)"]
            except json.JSONDecodeError:
                pass
        raise TelemetryError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None


def _events(path: str, document: object) -> list[object]:
    if isinstance(document, dict):
        events = document.get("traceEvents")
        if not isinstance(events, list):
            keys = ", ".join(list(document)[:6])
            raise TelemetryError(path, f"JSON object without a traceEvents list (keys: {keys})")
        return events
    if isinstance(document, list):
        return document
    raise TelemetryError(
        path,
        f"expected an object with traceEvents or a list of events, found {type(document).__name__}",
    )


def _key(value: object) -> object:
    """A pid/tid/id usable as a dict key (traces are not always tidy: lists become text)."""
    return value if isinstance(value, str | int | float | None) else json.dumps(value)


def _args(event: dict) -> dict:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


def _track_names(
    events: list[object],
) -> tuple[dict[object, str], dict[tuple[object, object], str]]:
    """Process names by pid and thread names by (pid, tid), from `M` metadata events."""
    processes: dict[object, str] = {}
    threads: dict[tuple[object, object], str] = {}
    for ev in events:  # metadata events are few but interleaved: one pass over all events
        if isinstance(ev, dict) and ev.get("ph") == "M":
            label = str(_args(ev).get("name", ""))
            if ev.get("name") == "process_name":
                processes[_key(ev.get("pid"))] = label
            elif ev.get("name") == "thread_name":
                threads[(_key(ev.get("pid")), _key(ev.get("tid")))] = label
    return processes, threads


INT64_MAX = 2**63 - 1


def _int64(value: object) -> int | None:
    """A JSON integer that fits int64, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and -INT64_MAX <= value <= INT64_MAX:
        return value
    return None


def _int_list(value: object) -> list[int] | None:
    """A non-empty list of int64 integers (launch grid/block), else None."""
    if isinstance(value, list) and value and all(_int64(x) is not None for x in value):
        return value
    return None


def _number(value: object) -> float | None:
    """A JSON number as float (inf when too large for a float), None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _duration_us(dur: object) -> tuple[float | None, tuple[str, str] | None]:
    """`dur` as float us, or the exclusion reason and message when it is not usable."""
    value = _number(dur)
    if value is None:
        return None, ("missing_duration", "missing" if dur is None else f"not a number ({dur!r})")
    if not math.isfinite(value):
        return None, ("nonfinite_duration", f"NaN or infinite ({dur!r})")
    if value <= 0:
        return None, ("nonpositive_duration", f"zero or negative ({dur!r})")
    return value, None


def read_chrome_trace(path: str | Path, *, max_bytes: int = MAX_TRACE_BYTES) -> ChromeTrace:
    """Read the device-kernel events of a Chrome trace-event JSON file (optionally gzipped).

    Raises:
        TelemetryError: unreadable, empty, over `max_bytes`, invalid JSON, not a trace (neither
            an object with `traceEvents` nor a list), or no device-kernel event at all.
    """
    file = str(path)
    document, warnings = _parse(file, _load_bytes(file, max_bytes))
    events = _events(file, document)
    processes, threads = _track_names(events)
    cpu_ops: dict[object, tuple[str, object]] = {}
    rows: list[dict[str, object]] = []
    skipped: dict[str, int] = {}
    counts: dict[str, int] = {}
    examples: dict[str, list[RowRef]] = {}
    not_objects = 0
    for index, ev in enumerate(events):  # JSON events arrive as Python objects, one by one
        if not isinstance(ev, dict):
            not_objects += 1
            continue
        if ev.get("ph") != "X":
            continue
        category = str(ev.get("cat", "")).lower()
        args = _args(ev)
        if category in ("cpu_op", "operator") and "External id" in args:
            cpu_ops[_key(args["External id"])] = (str(ev.get("name", "")), args.get("Input Dims"))
        pid, tid = _key(ev.get("pid")), _key(ev.get("tid"))
        on_stream = bool(
            DEVICE_PROCESS.search(processes.get(pid, ""))
            and STREAM_THREAD.search(threads.get((pid, tid), ""))
        )
        if category not in KERNEL_CATEGORIES and (category in HOST_CATEGORIES or not on_stream):
            skipped[category or "(no category)"] = skipped.get(category or "(no category)", 0) + 1
            continue
        dur_us, problem = _duration_us(ev.get("dur"))
        if problem is not None:
            reason, message = problem
            counts[reason] = counts.get(reason, 0) + 1
            if len(examples.setdefault(reason, [])) < MAX_EXAMPLES:
                examples[reason].append(RowRef(file, 0, index, "dur", message))
            continue
        rows.append(
            {
                "event": index,
                "name": str(ev.get("name", "")),
                "ts_us": _number(ev.get("ts")),
                "dur_us": dur_us,
                "pid": None if pid is None else str(pid),
                "tid": None if tid is None else str(tid),
                "stream": _int64(args.get("stream")),
                "grid": _int_list(args.get("grid")),
                "block": _int_list(args.get("block")),
                "external_id": _key(args.get("External id")),
            }
        )
    if not_objects:
        warnings.append(f"{file}: {not_objects} trace events are not JSON objects; ignored")
    read = len(rows) + sum(counts.values())
    if read == 0:
        kinds = ", ".join(f"{c} {n}" for c, n in sorted(skipped.items())) or "none"
        raise TelemetryError(
            file, f"no device-kernel events (complete events by category: {kinds})"
        )
    report = build_report(read, len(rows), counts, examples, TRACE_REASONS)
    raise_if_nothing_kept(file, report)
    kernels = _kernel_frame(rows, cpu_ops)
    unmapped = (
        kernels.filter(pl.col("op").is_null())
        .group_by("name")
        .agg(pl.len().cast(pl.Int64).alias("count"), pl.col("dur_us").sum().alias("total_us"))
        .sort(["total_us", "name"], descending=[True, False])
    )
    return ChromeTrace(file, kernels, unmapped, skipped, report, tuple(warnings))


def _kernel_frame(
    rows: list[dict[str, object]], cpu_ops: dict[object, tuple[str, object]]
) -> pl.DataFrame:
    """Kernel rows with mapped op/kind and, where the launching CPU op recorded dims, GEMM shapes."""
    mapping = map_kernel_names(str(r["name"]) for r in rows)
    for row in rows:  # per-event dict lookups; the regex work is per distinct name above
        op, kind = mapping[str(row["name"])]
        external_id = row.pop("external_id")
        launcher = None if external_id is None else cpu_ops.get(external_id)
        cpu_name, dims = launcher if launcher is not None else (None, None)
        shape = gemm_shape(cpu_name, dims) if (op == "gemm" and cpu_name) else None
        if shape is not None and max(shape) > INT64_MAX:
            shape = None
        row.update(
            op=op,
            kind=kind,
            cpu_op=cpu_name,
            input_dims=None if dims is None else json.dumps(dims),
            m=shape.m if shape else None,
            n=shape.n if shape else None,
            k=shape.k if shape else None,
            batch=shape.batch if shape else None,
        )
    return pl.DataFrame(rows, schema=TRACE_SCHEMA)


__all__ = [
    "MAX_TRACE_BYTES",
    "TRACE_REASONS",
    "TRACE_SCHEMA",
    "ChromeTrace",
    "read_chrome_trace",
]
