"""Predict measured kernels and score the predictions (`workbench telemetry compare`).

Input: a polars frame in the kernel-telemetry schema of /work/shared/data/measured/README.md
(one row per measured kernel: `op` gemm | attention_prefill | attention_decode | elementwise,
shape columns, `latency_us`, `source`...). `predict_kernels` returns the model's time for every
row (us, numpy), vectorized per op; `accuracy_report` scores it and returns a plain dict (the
`--json` form); `report_markdown` renders that dict.

What a measured row contains is a property of how it was measured, stated here once:

* Times are device time (CUDA-graph replay or profiler kernel time): no host launch cost, so a
  prediction is the device floor plus the kernel's phases.
* An attention row times TensorRT-LLM's attention op: a QKV preprocessing kernel (RoPE and the
  KV-cache write) followed by the attention kernel. Its decode variant is the library's choice
  (`library.trtllm_packs_query_heads`): XQA, all query heads of one KV head packed in one
  thread block, for head groups of 8-32 with enough blocks to fill the device, with its own
  per-wave and per-op cycles (`library.XQA_WAVE_CYCLES`, `XQA_FIXED_CYCLES`); otherwise masked
  MHA, one (request, head) per thread block.
* Elementwise rows time simple hand-written kernels (`ELEMENTWISE_KERNELS`): their bytes per
  element, dependent passes and the bytes one unit keeps in flight describe that software.
* Rows whose source runs a layer's kernels in sequence (`WARM_CACHE_SOURCES`) find an input in
  the shared cache when the kernel before wrote it and did not stream a GEMM's weights
  (`reads_resident_input`), and leave their last writes dirty in it for later kernels to write
  back (`kernels.deferred_write_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from model.compiler.autotune import best_attention, best_gemm
from model.compiler.blocks import LLAMA_OPS
from model.compiler.blocks import OPS as BLOCK_OPS
from model.compiler.hardware import DTYPE_BYTES, HardwareEnvelope
from model.compiler.kernels import elementwise_phase
from model.compiler.library import (
    MHA_FIXED_CYCLES,
    XQA_FIXED_CYCLES,
    XQA_WAVE_CYCLES,
    trtllm_packs_query_heads,
)
from model.compiler.regimes import ErrorBands, band_key, shipped_bands

OPS = ("gemm", "attention_prefill", "attention_decode", "elementwise")
"""Values of the `op` column the predictor understands."""

WARM_CACHE_SOURCES = ("vidur",)
"""Substrings of `source` naming measurements that run a layer's kernels in sequence with no cache
flush between them: Vidur's profiler times each op inside the decoder block's forward pass
(microsoft/vidur, vidur/profiling/mlp/mlp_impl.py: embedding, norm, QKV projection, RoPE, output
projection, residual add, norm, gate/up projection, SiLU-multiply, down projection, add, repeated
20 times), so an op's input is the output of the kernel launched just before it."""


def reads_resident_input(kind: str) -> bool:
    """Whether an elementwise op of `kind` finds its input in the shared cache when a layer's
    kernels run in sequence: in a llama block (`blocks.LLAMA_OPS`, the first op after the previous
    layer's last) it runs right after an elementwise op, never after a GEMM. rmsnorm follows a
    residual add, whose traffic is its three tensors (in Vidur's loop the first norm follows the
    embedding gather, also elementwise); rope follows qkv_proj, silu_mul gate_up_proj,
    the residual adds out_proj and down_proj (their other input was written before those GEMMs):
    a GEMM streams its weights through the cache after its first output tiles (hidden x n x 2 B,
    12.6 MB for Llama-2-7B's QKV at tp 8, 180 MB for its gate/up at tp 1), which evicts them
    from an LRU cache holding 20 MB."""
    names = [op for op in LLAMA_OPS if BLOCK_OPS[op].elementwise == kind]
    before = {op: LLAMA_OPS[i - 1] for i, op in enumerate(LLAMA_OPS)}
    return bool(names) and all(BLOCK_OPS[before[op]].kind != "gemm" for op in names)


@dataclass(frozen=True)
class ElementwiseKernel:
    """How a measured elementwise kernel moves memory (a property of its implementation).

    Attributes:
        reads: input tensors of rows x cols elements it reads.
        writes: output tensors of rows x cols elements it writes.
        dependent_passes: passes over the row that wait for the previous one (a norm: 2).
        inflight_kib_per_unit: KiB one unit keeps in flight (Little's law caps the stream rate
            at units x inflight / fill latency).
        flops_per_element: arithmetic per output element.
    """

    reads: float
    writes: float
    dependent_passes: int
    inflight_kib_per_unit: float
    flops_per_element: float


ELEMENTWISE_KERNELS: dict[str, ElementwiseKernel] = {
    # PyTorch's vectorized add: 16-byte loads by every resident thread saturate HBM.
    "add": ElementwiseKernel(2, 1, 1, 64.0, 1.0),
    # One thread block per row with scalar 2-byte loads: sum of squares, then normalize.
    "rmsnorm": ElementwiseKernel(1, 1, 2, 12.0, 4.0),
    # Scalar loads of gate and up (two independent loads per element), cols = output width.
    "silu_mul": ElementwiseKernel(2, 1, 1, 19.0, 6.0),
    # In-place rotation of q and k (cols = q + k width), scalar loads of pairs plus cos/sin.
    "rope": ElementwiseKernel(1, 1, 1, 16.0, 6.0),
}
"""elementwise `kind` -> its kernel's memory behaviour. The in-flight sizes are anchored on
scalar loads by ~2,048 resident threads per SM (4-8 KiB per outstanding load) and set from the
plateau of the A100 layer-op rows; README "Elementwise kernels" says how."""

_REQUIRED = {
    "gemm": ("m", "n", "k"),
    "attention_prefill": ("batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim"),
    "attention_decode": ("batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim"),
    "elementwise": ("kind", "rows", "cols"),
}


def as_plain_text(frame: pl.DataFrame) -> pl.DataFrame:
    """Enum/categorical label columns as plain strings (the telemetry readers use Enums)."""
    labels = [
        pl.col(c).cast(pl.String)
        for c in ("op", "dtype", "kind", "layer_op", "hardware", "source")
        if c in frame.columns and isinstance(frame[c].dtype, pl.Enum | pl.Categorical)
    ]
    return frame.with_columns(labels) if labels else frame


def _check(frame: pl.DataFrame) -> None:
    """Raise a one-line ValueError naming the first bad row/column."""
    for column in ("op", "dtype", "latency_us"):
        if column not in frame.columns:
            raise ValueError(f"telemetry: missing column {column!r}")
    bad_op = frame.with_row_index("row").filter(~pl.col("op").is_in(OPS))
    if len(bad_op):
        row = bad_op.row(0, named=True)
        raise ValueError(f"telemetry row {row['row']}: op {row['op']!r} is not one of {OPS}")
    bad_dtype = frame.with_row_index("row").filter(~pl.col("dtype").is_in(list(DTYPE_BYTES)))
    if len(bad_dtype):
        row = bad_dtype.row(0, named=True)
        raise ValueError(f"telemetry row {row['row']}: dtype {row['dtype']!r} is not known")
    for op, columns in _REQUIRED.items():
        rows = frame.with_row_index("row").filter(pl.col("op") == op)
        for column in columns:
            if column not in frame.columns:
                if len(rows):
                    raise ValueError(f"telemetry: {op} rows need column {column!r}")
                continue
            if column == "kind":
                bad = rows.filter(~pl.col("kind").is_in(list(ELEMENTWISE_KERNELS)))
            else:
                bad = rows.filter(pl.col(column).is_null() | (pl.col(column) < 1))
            if len(bad):
                row = bad.row(0, named=True)
                raise ValueError(
                    f"telemetry row {row['row']}: {op} needs {column} "
                    f"{'in ' + str(tuple(ELEMENTWISE_KERNELS)) if column == 'kind' else '>= 1'}"
                    f", got {row[column]!r}"
                )


def _column(frame: pl.DataFrame, name: str) -> np.ndarray:
    return frame[name].cast(pl.Float64).to_numpy()


def _warm(frame: pl.DataFrame) -> np.ndarray:
    if "source" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    source = frame["source"].fill_null("").str.to_lowercase()
    return np.any([source.str.contains(s, literal=True).to_numpy() for s in WARM_CACHE_SOURCES], 0)


def _predict_gemm(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    out = np.empty(len(frame))
    for dtype in frame["dtype"].unique().to_list():
        sel = (frame["dtype"] == dtype).to_numpy()
        sub = frame.filter(pl.Series(sel))
        batch = _column(sub, "batch") if "batch" in sub.columns else np.ones(len(sub))
        batch = np.where(np.isfinite(batch) & (batch >= 1), batch, 1.0)  # empty: one GEMM
        m, n, k = _column(sub, "m"), _column(sub, "n"), _column(sub, "k")
        cost, _ = best_gemm(hw, dtype, m, n, k, batch=batch)
        out[sel] = hw.min_kernel_us + cost.time_us
    return out


def _predict_attention(frame: pl.DataFrame, hw: HardwareEnvelope, causal: bool) -> np.ndarray:
    out = np.empty(len(frame))
    keys = frame.select("dtype", pl.col("head_dim").cast(pl.Int64)).unique(maintain_order=True)
    for dtype, head_dim in keys.iter_rows():
        sel = ((frame["dtype"] == dtype) & (frame["head_dim"] == head_dim)).to_numpy()
        sub = frame.filter(pl.Series(sel))
        batch, q_len, kv_len = (_column(sub, c) for c in ("batch", "q_len", "kv_len"))
        heads, kv_heads = _column(sub, "heads"), _column(sub, "kv_heads")
        packed = False if causal else trtllm_packs_query_heads(hw, batch, kv_len, heads, kv_heads)
        cost, _ = best_attention(
            hw, dtype, batch, q_len, kv_len, heads, kv_heads, head_dim, causal,
            pack_query_heads=np.reshape(packed, (-1, 1)),
            packed_wave_cycles=XQA_WAVE_CYCLES, packed_fixed_cycles=XQA_FIXED_CYCLES,
            per_head_fixed_cycles=MHA_FIXED_CYCLES,
        )  # fmt: skip
        # The preprocessing kernel reads q, k, v of the new tokens and writes them back (RoPE
        # applied, keys and values appended to the cache): one streaming pass.
        qkv = batch * q_len * (heads + 2 * kv_heads) * head_dim * DTYPE_BYTES[dtype]
        prep = elementwise_phase(hw, qkv, qkv, 0.0, standalone=True).time_us[:, 0]
        out[sel] = 2 * hw.min_kernel_us + prep + cost.time_us
    return out


def _predict_elementwise(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    out = np.empty(len(frame))
    warm = _warm(frame)
    for kind, kernel in ELEMENTWISE_KERNELS.items():
        for dtype in frame["dtype"].unique().to_list():
            sel = ((frame["kind"] == kind) & (frame["dtype"] == dtype)).fill_null(False).to_numpy()
            if not sel.any():
                continue
            sub = frame.filter(pl.Series(sel))
            elements = _column(sub, "rows") * _column(sub, "cols")
            tensor = elements * DTYPE_BYTES[dtype]
            cost = elementwise_phase(
                hw,
                kernel.reads * tensor,
                kernel.writes * tensor,
                kernel.flops_per_element * elements,
                standalone=True,
                dependent_passes=kernel.dependent_passes,
                inflight_bytes_per_unit=kernel.inflight_kib_per_unit * 1024.0,
                warm_cache=warm[sel][:, None] & reads_resident_input(kind),
                write_back=warm[sel][:, None],
            )
            out[sel] = hw.min_kernel_us + cost.time_us[:, 0]
    return out


def predict_kernels(
    frame: pl.DataFrame, hw: HardwareEnvelope, *, checked: bool = False
) -> np.ndarray:
    """Predicted device time of every row of a telemetry frame on `hw`, us, in row order.
    checked: the frame already passed an unchecked call's validation (a fit predicting the same
    rows many times skips re-validating them)."""
    frame = as_plain_text(frame)
    if not checked:
        _check(frame)
    out = np.full(len(frame), np.nan)
    ops = frame["op"].to_numpy()
    for op, predict in (
        ("gemm", lambda f: _predict_gemm(f, hw)),
        ("attention_prefill", lambda f: _predict_attention(f, hw, causal=True)),
        ("attention_decode", lambda f: _predict_attention(f, hw, causal=False)),
        ("elementwise", lambda f: _predict_elementwise(f, hw)),
    ):
        sel = ops == op
        if sel.any():
            out[sel] = predict(frame.filter(pl.Series(sel)))
    return out


def work_bounds(frame: pl.DataFrame, hw: HardwareEnvelope) -> tuple[np.ndarray, np.ndarray]:
    """(useful FLOPs, minimum bytes) of every row: the work no implementation can avoid.

    Minimum bytes count each operand, output and KV-cache element once; warm-cache sources may
    serve them from the shared cache (see `fastest_possible_us`).
    """
    frame = as_plain_text(frame)
    n = len(frame)
    flops, traffic = np.zeros(n), np.zeros(n)
    ops = frame["op"].to_numpy()
    b = frame["dtype"].replace_strict(DTYPE_BYTES, default=2).cast(pl.Float64).to_numpy()

    def col(name: str) -> np.ndarray:
        if name not in frame.columns:
            return np.zeros(n)
        return frame[name].cast(pl.Float64).fill_null(0.0).to_numpy()

    m, nn, k = col("m"), col("n"), col("k")
    gemm = ops == "gemm"
    gemms = np.maximum(col("batch"), 1.0)  # a batched GEMM row: batch independent GEMMs
    flops[gemm] = (2 * m * nn * k * gemms)[gemm]
    traffic[gemm] = ((m * k + k * nn + m * nn) * b * gemms)[gemm]
    batch, q, kv, h, hk, d = (
        col(c) for c in ("batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim")
    )
    for op, causal in (("attention_prefill", 0.5), ("attention_decode", 1.0)):
        sel = ops == op
        flops[sel] = (4 * batch * h * q * kv * d * causal)[sel]
        traffic[sel] = ((2 * batch * q * h * d + 2 * batch * kv * hk * d) * b)[sel]
    if "kind" in frame.columns:
        kinds = frame["kind"].fill_null("").to_numpy()
        elements = col("rows") * col("cols")
        for kind, kernel in ELEMENTWISE_KERNELS.items():
            sel = (ops == "elementwise") & (kinds == kind)
            flops[sel] = (kernel.flops_per_element * elements)[sel]
            traffic[sel] = ((kernel.reads + kernel.writes) * elements * b)[sel]
    return flops, traffic


def _peak_flops(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """Spec-sheet peak FLOP/s of each row's dtype at nominal clock (the device's highest peak
    for a dtype it does not list)."""
    peaks = {k: float(v) for k, v in hw.peak_tflops.items()}
    per_row = frame["dtype"].replace_strict(peaks, default=None, return_dtype=pl.Float64)
    return per_row.fill_null(max(peaks.values())).to_numpy() * 1e12


def fastest_possible_us(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """Lower bound on each row's time at the envelope's peaks (no efficiency, no floor), us.

    Compute at peak dtype throughput; bytes at HBM bandwidth, or at the shared cache's for
    warm-cache sources when they fit half the cache.
    """
    frame = as_plain_text(frame)
    flops, traffic = work_bounds(frame, hw)
    peak = _peak_flops(frame, hw) * hw.clock_scale
    warm = _warm(frame) & (traffic <= hw.shared_cache_mib * 2**20 / 2)
    bandwidth = np.where(warm, hw.cache_gbs * hw.clock_scale, hw.hbm_gbs) * 1e9
    return np.maximum(flops / peak, traffic / bandwidth) * 1e6


def naive_roofline_us(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """The naive roofline: max(FLOPs / peak, bytes / HBM bandwidth), spec-sheet peaks, us."""
    frame = as_plain_text(frame)
    flops, traffic = work_bounds(frame, hw)
    peak = _peak_flops(frame, hw)
    return np.maximum(flops / peak, traffic / (hw.hbm_gbs * 1e9)) * 1e6


def _metrics(measured: np.ndarray, predicted: np.ndarray) -> dict:
    ape = np.abs(predicted - measured) / measured
    if len(ape) == 0:
        return {"rows": 0, "mdape": None, "mape": None, "p90_ape": None, "median_ratio": None}
    return {
        "rows": len(ape),
        "mdape": float(np.median(ape)),
        "mape": float(np.mean(ape)),
        "p90_ape": float(np.percentile(ape, 90)),
        "median_ratio": float(np.median(measured / predicted)),
    }


_SHAPE_COLUMNS = ("m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim",
                  "kind", "rows", "cols", "tp", "layer_op")  # fmt: skip


def _regime_rows(ops, measured, predicted, bands: ErrorBands) -> dict:
    """Per band cell ('op|time class'): rows, MdAPE, p10/p50/p90 of measured / predicted, the
    band's own ratios and the share of rows inside the band."""
    keys = band_key(ops, predicted)
    ratios = bands.ratios(ops, predicted)
    out = {}
    for key in sorted(set(keys.tolist())):
        sel = keys == key
        r = measured[sel] / predicted[sel]
        q = np.quantile(r, (0.1, 0.5, 0.9))
        inside = (r >= ratios[sel, 0]) & (r <= ratios[sel, 2])
        out[key] = {
            "rows": int(sel.sum()),
            "mdape": float(np.median(np.abs(1.0 / r - 1.0))),
            "ratio_p10": float(q[0]),
            "ratio_p50": float(q[1]),
            "ratio_p90": float(q[2]),
            "band_p10": float(ratios[sel, 0][0]),
            "band_p90": float(ratios[sel, 2][0]),
            "band_coverage": float(np.mean(inside)),
        }
    return out


def accuracy_report(
    frame: pl.DataFrame, hw: HardwareEnvelope, worst: int = 10, bands: ErrorBands | None = None
) -> dict:
    """Score the model on a telemetry frame; a plain dict (stable keys, README "Accuracy report").

    Rows faster than `fastest_possible_us` allows are counted in `implausible_rows` and left
    out of every metric. Keys: rows, mdape, mape, p90_ape, median_ratio (measured/predicted),
    implausible_rows, by_op, by_layer_op, by_kind, by_regime, bands, worst, naive_roofline,
    hardware, notes (how dtypes without a native matrix peak were run,
    HardwareEnvelope.matrix_dtype). APEs are fractions (0.1 = 10%). Every prediction carries a
    10-90% error band from `bands` (default: the shipped A100 residual bands,
    `regimes.shipped_bands`): `worst` rows give theirs as band_us, `by_regime` the band and its
    coverage per op and time class, and `bands` the provenance and overall coverage.
    """
    frame = as_plain_text(frame)
    bands = shipped_bands() if bands is None else bands
    predicted = predict_kernels(frame, hw)
    measured = frame["latency_us"].cast(pl.Float64).to_numpy()
    if np.any(~np.isfinite(measured) | (measured <= 0)):
        row = int(np.flatnonzero(~np.isfinite(measured) | (measured <= 0))[0])
        raise ValueError(f"telemetry row {row}: latency_us must be > 0, got {measured[row]!r}")
    plausible = measured >= fastest_possible_us(frame, hw)
    naive = naive_roofline_us(frame, hw)
    report = {
        "hardware": hw.name,
        **_metrics(measured[plausible], predicted[plausible]),
        "implausible_rows": int(np.sum(~plausible)),
        "by_op": {},
        "by_layer_op": {},
        "by_kind": {},
    }
    for key, column in (("by_op", "op"), ("by_layer_op", "layer_op"), ("by_kind", "kind")):
        if column not in frame.columns:
            continue
        values = frame[column].to_numpy()
        for value in sorted({v for v in values if v is not None}):
            sel = (values == value) & plausible
            report[key][str(value)] = {
                **_metrics(measured[sel], predicted[sel]),
                "naive_mdape": _metrics(measured[sel], naive[sel])["mdape"],
            }
    ops = frame["op"].to_numpy()
    band = bands.band_us(ops, predicted)
    report["by_regime"] = _regime_rows(
        ops[plausible], measured[plausible], predicted[plausible], bands
    )
    inside = (measured >= band[:, 0]) & (measured <= band[:, 1])
    report["bands"] = {
        "provenance": bands.provenance,
        "coverage": float(np.mean(inside[plausible])) if plausible.any() else None,
    }
    ape = np.where(plausible, np.abs(predicted - measured) / measured, -1.0)
    order = np.argsort(-ape, kind="stable")[: max(worst, 0)]
    shape_columns = [c for c in _SHAPE_COLUMNS if c in frame.columns]
    report["worst"] = [
        {
            "row": int(i),
            "op": frame["op"][int(i)],
            **{c: frame[c][int(i)] for c in shape_columns if frame[c][int(i)] is not None},
            "measured_us": float(measured[i]),
            "predicted_us": float(predicted[i]),
            "band_us": [float(band[i, 0]), float(band[i, 1])],
            "ape": float(ape[i]),
        }
        for i in order
        if ape[i] >= 0
    ]
    report["naive_roofline"] = _metrics(measured[plausible], naive[plausible])
    notes = (hw.matrix_dtype(d)[1] for d in sorted(set(frame["dtype"].to_list())))
    report["notes"] = [note for note in notes if note]
    return report


def report_markdown(report: dict) -> str:
    """The accuracy report as a markdown table (what `telemetry compare --markdown` prints)."""

    def pct(value) -> str:
        return "-" if value is None else f"{100 * value:.1f}%"

    def ratio(value) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [
        f"Model vs measured on {report['hardware']}: {report['rows']} rows "
        f"({report['implausible_rows']} implausible rows excluded)",
        "",
        "| group | rows | MdAPE | MAPE | p90 APE | median measured/predicted | naive MdAPE |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| all | {report['rows']} | {pct(report['mdape'])} | {pct(report['mape'])} | "
        f"{pct(report['p90_ape'])} | {ratio(report['median_ratio'])} | "
        f"{pct(report['naive_roofline']['mdape'])} |",
    ]
    for key in ("by_op", "by_layer_op", "by_kind"):
        for name, m in report[key].items():
            lines.append(
                f"| {key[3:]}={name} | {m['rows']} | {pct(m['mdape'])} | {pct(m['mape'])} | "
                f"{pct(m['p90_ape'])} | {ratio(m['median_ratio'])} | {pct(m['naive_mdape'])} |"
            )
    lines += [f"Note: {note}." for note in report.get("notes", [])]
    if report.get("by_regime"):
        lines += [
            "",
            "Signed ratio measured/predicted per regime (op | predicted time), and the 10-90% "
            f"error band each prediction carries ({report['bands']['provenance']}; "
            f"{pct(report['bands']['coverage'])} of rows inside their band):",
            "",
            "| regime | rows | MdAPE | p10 | p50 | p90 | band | inside band |",
            "|---|---:|---:|---:|---:|---:|---|---:|",
        ]
        for name, m in report["by_regime"].items():
            lines.append(
                f"| {name.replace('|', ' ')} | {m['rows']} | {pct(m['mdape'])} | "
                f"{ratio(m['ratio_p10'])} | "
                f"{ratio(m['ratio_p50'])} | {ratio(m['ratio_p90'])} | "
                f"x{m['band_p10']:.2f}-x{m['band_p90']:.2f} | {pct(m['band_coverage'])} |"
            )
    if report["worst"]:
        lines += [
            "",
            "Worst rows:",
            "",
            "| row | op | shape | measured us | predicted us | 10-90% band us | APE |",
        ]
        lines.append("|---:|---|---|---:|---:|---|---:|")
        for w in report["worst"]:
            shape = ", ".join(
                f"{k}={v}"
                for k, v in w.items()
                if k not in {"row", "op", "measured_us", "predicted_us", "band_us", "ape"}
            )
            low, high = w.get("band_us", (None, None))
            band = "-" if low is None else f"{low:.2f}-{high:.2f}"
            lines.append(
                f"| {w['row']} | {w['op']} | {shape} | {w['measured_us']:.2f} | "
                f"{w['predicted_us']:.2f} | {band} | {pct(w['ape'])} |"
            )
    return "\n".join(lines) + "\n"
