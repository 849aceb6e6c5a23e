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

The file is streamed (`json_stream`: ijson, with nesting, number and size bounds checked by
line; gzip read transparently); files over `MAX_TRACE_BYTES` on disk or after decompression
are refused before they exhaust memory. `KernelCollector` is the row builder the Nsight readers
share.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry.bounded import MAX_TRACE_BYTES
from model.telemetry.errors import (
    MAX_EXAMPLES,
    ExclusionReport,
    RowRef,
    TelemetryError,
    build_report,
    raise_if_nothing_kept,
    token,
)
from model.telemetry.json_stream import number, pieces, stream_items, top_level_keys
from model.telemetry.kernel_names import map_kernel_names
from model.telemetry.op_shapes import gemm_shape
from model.telemetry.vocab import KIND_DTYPE

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
        row_label: what `event` counts: "event" (trace events), "row" (Nsight Systems rows in
            start order), "line" (Nsight Compute CSV lines).
    """

    file: str
    kernels: pl.DataFrame
    unmapped: pl.DataFrame
    skipped: dict[str, int]
    report: ExclusionReport
    warnings: tuple[str, ...]
    row_label: str = "event"

    def where(self, event: int) -> str:
        """`FILE: event N`, `FILE: row N` or `FILE:LINE` of a kernel's `event` value."""
        if self.row_label == "line":
            return f"{self.file}:{event}"
        return f"{self.file}: {self.row_label} {event}"


def _key(value: object) -> object:
    """A pid/tid/id usable as a dict key (traces are not always tidy: lists become text)."""
    return value if isinstance(value, str | int | float | None) else json.dumps(value)


def _args(event: dict) -> dict:
    args = event.get("args")
    return args if isinstance(args, dict) else {}


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


def _duration_us(dur: object) -> tuple[float | None, tuple[str, str] | None]:
    """`dur` as float us, or the exclusion reason and message when it is not usable."""
    value = number(dur)
    if value is None:
        shown = "missing" if dur is None else f"not a number ({token(dur)})"
        return None, ("missing_duration", shown)
    if not math.isfinite(value):
        return None, ("nonfinite_duration", f"NaN or infinite ({value!r})")
    if value <= 0:
        return None, ("nonpositive_duration", f"zero or negative ({dur!r})")
    return value, None


_ROW_COLUMNS = ("event", "name", "ts_us", "dur_us", "pid", "tid", "stream", "grid", "block")


@dataclass
class KernelCollector:
    """Device-kernel rows of one file as they are found, column by column, with `dur` checked
    (bad ones counted by reason). Shared by the trace, Nsight Systems and Nsight Compute
    readers; `finish` builds the `ChromeTrace`."""

    file: str
    row_label: str = "event"
    columns: dict[str, list] = field(default_factory=lambda: {c: [] for c in _ROW_COLUMNS})
    external_ids: list[object] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[RowRef]] = field(default_factory=dict)

    def add(
        self,
        event: int,
        name: str,
        ts: object,
        dur: object,
        *,
        pid: object = None,
        tid: object = None,
        stream: object = None,
        grid: object = None,
        block: object = None,
        external_id: object = None,
        line: int = 0,
        dur_column: str = "dur",
    ) -> None:
        """One device kernel: `event` its index in the file, `ts`/`dur` in us as read."""
        dur_us, problem = _duration_us(dur)
        if problem is not None:
            reason, message = problem
            self.counts[reason] = self.counts.get(reason, 0) + 1
            if len(self.examples.setdefault(reason, [])) < MAX_EXAMPLES:
                self.examples[reason].append(RowRef(self.file, line, event, dur_column, message))
            return
        values = (
            event,
            name,
            number(ts),
            dur_us,
            None if pid is None else str(pid),
            None if tid is None else str(tid),
            _int64(stream),
            _int_list(grid),
            _int_list(block),
        )
        for column, value in zip(self.columns.values(), values, strict=True):
            column.append(value)
        self.external_ids.append(external_id)

    @property
    def read(self) -> int:
        """Kernel rows seen, kept or excluded."""
        return len(self.columns["event"]) + sum(self.counts.values())

    def finish(
        self,
        cpu_ops: dict[object, tuple[str, object]],
        skipped: dict[str, int],
        warnings: tuple[str, ...],
        nothing_found: str,
    ) -> ChromeTrace:
        """The kernels in file order, mapped to ops; `nothing_found` is the error when the file
        held no device kernel at all."""
        if self.read == 0:
            raise TelemetryError(self.file, nothing_found)
        report = build_report(
            self.read, len(self.columns["event"]), self.counts, self.examples, TRACE_REASONS
        )
        raise_if_nothing_kept(self.file, report)
        kernels = _kernel_frame(self.columns, self.external_ids, cpu_ops)
        unmapped = (
            kernels.filter(pl.col("op").is_null())
            .group_by("name")
            .agg(pl.len().cast(pl.Int64).alias("count"), pl.col("dur_us").sum().alias("total_us"))
            .sort(["total_us", "name"], descending=[True, False])
        )
        return ChromeTrace(self.file, kernels, unmapped, skipped, report, warnings, self.row_label)


@dataclass
class _TraceScan:
    """What one pass over the events of a trace gathers."""

    collector: KernelCollector
    index: int = 0
    not_objects: int = 0
    processes: dict[object, str] = field(default_factory=dict)
    threads: dict[tuple[object, object], str] = field(default_factory=dict)
    cpu_ops: dict[object, tuple[str, object]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    candidates: list[tuple[int, str, dict]] = field(default_factory=list)

    def consume(self, events: list) -> None:
        """One batch of events, in file order."""
        for ev in events:  # JSON events arrive as Python objects, one by one
            index = self.index
            self.index += 1
            if not isinstance(ev, dict):
                self.not_objects += 1
                continue
            phase = ev.get("ph")
            if phase == "M":
                self._metadata(ev)
                continue
            if phase != "X":
                continue
            category = str(ev.get("cat", "")).lower()
            args = _args(ev)
            if category in ("cpu_op", "operator") and "External id" in args:
                launcher = (str(ev.get("name", "")), args.get("Input Dims"))
                self.cpu_ops[_key(args["External id"])] = launcher
            if category in KERNEL_CATEGORIES:
                self._kernel(index, ev, args)
            elif category in HOST_CATEGORIES:
                self._skip(category)
            else:  # a device-track event or a host one: known once every track is named
                self.candidates.append((index, category, ev))

    def _metadata(self, ev: dict) -> None:
        label = str(_args(ev).get("name", ""))
        if ev.get("name") == "process_name":
            self.processes[_key(ev.get("pid"))] = label
        elif ev.get("name") == "thread_name":
            self.threads[(_key(ev.get("pid")), _key(ev.get("tid")))] = label

    def _skip(self, category: str) -> None:
        key = category or "(no category)"
        self.skipped[key] = self.skipped.get(key, 0) + 1

    def _kernel(self, index: int, ev: dict, args: dict) -> None:
        self.collector.add(
            index,
            str(ev.get("name", "")),
            ev.get("ts"),
            ev.get("dur"),
            pid=_key(ev.get("pid")),
            tid=_key(ev.get("tid")),
            stream=args.get("stream"),
            grid=args.get("grid"),
            block=args.get("block"),
            external_id=_key(args.get("External id")),
        )

    def resolve(self) -> None:
        """Events without a kernel or host category: kernels when on a device stream track."""
        for index, category, ev in self.candidates:
            pid, tid = _key(ev.get("pid")), _key(ev.get("tid"))
            on_stream = bool(
                DEVICE_PROCESS.search(self.processes.get(pid, ""))
                and STREAM_THREAD.search(self.threads.get((pid, tid), ""))
            )
            if on_stream:
                self._kernel(index, ev, _args(ev))
            else:
                self._skip(category)
        self.candidates = []


def _first_byte(file: str, max_bytes: int) -> bytes:
    """The first non-blank byte of the (decompressed) trace, b"" when it is blank."""
    for piece in pieces(file, max_bytes):
        head = piece.data.lstrip(b" \t\r\n")
        if head:
            return head[:1]
    return b""


JSON_KINDS = {b'"': "a string", b"t": "a boolean", b"f": "a boolean", b"n": "null"}


def read_chrome_trace(path: str | Path, *, max_bytes: int = MAX_TRACE_BYTES) -> ChromeTrace:
    """Read the device-kernel events of a Chrome trace-event JSON file (optionally gzipped),
    streaming: memory grows with the kernels and CPU ops kept, not with the file.

    Raises:
        TelemetryError: not a regular file, over `max_bytes` (on disk or decompressed), empty,
            invalid JSON or over a bound of `json_stream` (with the line), not a trace (neither
            an object with `traceEvents` nor a list), or no device-kernel event at all.
    """
    file = str(path)
    first = _first_byte(file, max_bytes)
    if not first:
        raise TelemetryError(file, "empty file")
    if first not in (b"{", b"["):
        found = JSON_KINDS.get(first, "a number" if first in b"-0123456789" else "not JSON")
        raise TelemetryError(
            file, f"expected an object with traceEvents or a list of events, found {found}"
        )
    scan = _TraceScan(KernelCollector(file))
    prefix = "traceEvents.item" if first == b"{" else "item"
    warnings = list(
        stream_items(file, prefix, max_bytes, scan.consume, allow_open_array=first == b"[")
    )
    if first == b"{" and scan.index == 0:
        keys, found = top_level_keys(file, max_bytes)
        if not found:
            listed = ", ".join(token(k).strip("'") for k in keys) or "none"
            raise TelemetryError(file, f"JSON object without a traceEvents list (keys: {listed})")
    scan.resolve()
    if scan.not_objects:
        warnings.append(f"{file}: {scan.not_objects} trace events are not JSON objects; ignored")
    kinds = ", ".join(f"{c} {n}" for c, n in sorted(scan.skipped.items())) or "none"
    return scan.collector.finish(
        scan.cpu_ops,
        scan.skipped,
        tuple(warnings),
        f"no device-kernel events: a CPU-only profile? (complete events by category: {kinds})",
    )


def _kernel_frame(
    columns: dict[str, list],
    external_ids: list[object],
    cpu_ops: dict[object, tuple[str, object]],
) -> pl.DataFrame:
    """Kernel rows with mapped op/kind and, where the launching CPU op recorded dims, GEMM
    shapes; sorted by event (device-track kernels are resolved after the others)."""
    names = columns["name"]
    mapping = map_kernel_names(names)
    extra: dict[str, list] = {c: [] for c in ("op", "kind", "cpu_op", "input_dims", "m", "n", "k",
                                              "batch")}  # fmt: skip
    for name, external_id in zip(names, external_ids, strict=True):  # dict lookups per kernel
        op, kind = mapping[name]
        launcher = None if external_id is None else cpu_ops.get(external_id)
        cpu_name, dims = launcher if launcher is not None else (None, None)
        shape = gemm_shape(cpu_name, dims) if (op == "gemm" and cpu_name) else None
        if shape is not None and max(shape) > INT64_MAX:
            shape = None
        for column, value in (
            ("op", op),
            ("kind", kind),
            ("cpu_op", cpu_name),
            ("input_dims", None if dims is None else json.dumps(dims)),
            ("m", shape.m if shape else None),
            ("n", shape.n if shape else None),
            ("k", shape.k if shape else None),
            ("batch", shape.batch if shape else None),
        ):
            extra[column].append(value)
    data = {**columns, **extra}
    lists = {c: _list_column(data.pop(c)) for c in ("grid", "block")}
    frame = pl.DataFrame(data, schema={c: t for c, t in TRACE_SCHEMA.items() if c in data})
    return frame.with_columns(**lists).select(list(TRACE_SCHEMA)).sort("event", maintain_order=True)


def _list_column(values: list[list[int] | None]) -> pl.Series:
    """Int64 lists (or null) as a polars List column, built from flat arrays: ~5x faster than
    polars converting each Python list."""
    rows = np.fromiter((i for i, v in enumerate(values) if v is not None for _ in v), np.int64)
    flat = np.fromiter((x for v in values if v is not None for x in v), np.int64, len(rows))
    grouped = pl.DataFrame({"i": rows, "v": flat}).group_by("i", maintain_order=True).agg("v")
    every = pl.DataFrame({"i": np.arange(len(values), dtype=np.int64)})
    return every.join(grouped, on="i", how="left", maintain_order="left")["v"]


__all__ = [
    "MAX_TRACE_BYTES",
    "TRACE_REASONS",
    "TRACE_SCHEMA",
    "ChromeTrace",
    "KernelCollector",
    "read_chrome_trace",
]
