"""Compile-plan model: prediction and service-table speed, and accuracy on the A100 data.

Targets: leave-one-regime-out and cross-source calibration transfer <= 12% MdAPE each
(`--transfer` runs only that section); all 9,240 A100 GEMM rows predicted in <= 0.1 s; a block's service-time table for batch
sizes 1..64 x 16 compiled shapes in <= 10 ms (also measured for an 8-core device, whose table
carries one table per busy-core count where the shared cache changes the plan's cost). Times are the best and the median of repeated
runs in one process (the first, warm-up run is not counted).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from benchmarks.report import argument_parser, write_section
from model.compiler.accuracy import accuracy_report, fastest_possible_us, predict_kernels
from model.compiler.autotune import best_gemm
from model.compiler.blocks import BlockSpec
from model.compiler.calibration import calibrate, regime_report, transfer
from model.compiler.hardware import preset
from model.compiler.library import trtllm_packs_query_heads
from model.compiler.measured import load_measured
from model.compiler.service_table import FallbackPolicy, build_service_table

COMMAND = "python -m benchmarks.bench_compile"


def _timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def speed_section() -> str:
    """Markdown table of the two speed targets."""
    a100 = preset("a100-sxm")
    gemm = load_measured("gemm")
    rows = [
        (
            "predict all A100 GEMM rows",
            len(gemm),
            *_timed(lambda: predict_kernels(gemm, a100), 7),
            0.1,
        )
    ]
    shapes = [128 * i for i in range(1, 17)]
    batches = list(range(1, 65))
    for phase in ("prefill", "decode"):
        block = BlockSpec("llama-decoder", phase, "bf16", 4096, 32, 32, 128, 11008, 32)
        for fusion in ("none", "standard", "aggressive"):

            def table(block=block, fusion=fusion):
                return build_service_table(
                    block, a100, fusion, {}, shapes, FallbackPolicy(), batches, shapes
                )

            rows.append(
                (f"service table, Llama-2-7B {phase}, {fusion}", 64 * 16, *_timed(table, 9), 0.010)
            )
    # An 8-core device with a shared cache: the plan is also costed for 2..8 busy cores (the
    # compiled tiles again, levels found by bisection); TinyLlama's weights fit the cache alone.
    npu = preset("npu-8c")
    tiny = BlockSpec("llama-decoder", "decode", "bf16", 2048, 32, 4, 64, 5632, 22)
    for fusion in ("standard", "aggressive"):

        def levels(fusion=fusion):
            return build_service_table(
                tiny, npu, fusion, {}, shapes, FallbackPolicy(), batches, shapes
            )

        busy = len(levels().busy)
        rows.append(
            (
                f"service table, TinyLlama-1.1B decode on npu-8c, {fusion} (+{busy} busy-core "
                "tables)",
                64 * 16,
                *_timed(levels, 9),
                0.010,
            )
        )
    lines = [
        "| what | points | best s | median s | target s | met |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for what, points, best, median, target in rows:
        lines.append(
            f"| {what} | {points} | {best:.4f} | {median:.4f} | {target:g} | "
            f"{'yes' if best <= target else 'NO'} |"
        )
    return "\n".join(lines)


def accuracy_section() -> str:
    """Markdown table: model vs naive roofline per file and op on the A100 data."""
    a100 = preset("a100-sxm")
    lines = [
        "| file | group | rows | model MdAPE | MAPE | p90 APE | measured/predicted | "
        "naive MdAPE | implausible |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("gemm", "attention", "layer_ops"):
        report = accuracy_report(load_measured(name), a100)
        groups = [("all", report, report["naive_roofline"]["mdape"])]
        for key in ("by_op", "by_layer_op", "by_kind"):
            groups += [(f"{key[3:]}={k}", v, v["naive_mdape"]) for k, v in report[key].items()]
        for label, m, naive in groups:
            lines.append(
                f"| {name} | {label} | {m['rows']} | {100 * m['mdape']:.1f}% | "
                f"{100 * m['mape']:.1f}% | {100 * m['p90_ape']:.1f}% | {m['median_ratio']:.2f} | "
                f"{100 * naive:.1f}% | {report['implausible_rows'] if label == 'all' else ''} |"
            )
    return "\n".join(lines)


def _ratio(r: dict) -> str:
    return f"{r['p10']:.2f} / {r['p50']:.2f} / {r['p90']:.2f}"


def transfer_section() -> str:
    """Markdown: leave-one-regime-out on the A100 GEMM table and cross-source transfer between
    TensorRT-LLM's GEMMs and Vidur's layer-op GEMMs; fitted values, suspect bounds, stability."""
    a100 = preset("a100-sxm")
    trt = load_measured("gemm")
    vidur = load_measured("layer_ops").filter(pl.col("op") == "gemm")
    start = time.perf_counter()
    results = []
    for report in regime_report(trt, a100):
        for direction, r in report["directions"].items():
            results.append((f"{report['split']}: {direction}", r, report["stability"]))
    for direction, r in (
        ("source: TRT-LLM -> Vidur", transfer(trt, vidur, a100)),
        ("source: Vidur -> TRT-LLM", transfer(vidur, trt, a100)),
    ):
        results.append((direction, r, None))
    elapsed = time.perf_counter() - start
    fields = list(results[0][1]["fitted"])
    lines = [
        "| fit -> predict | rows fit | rows predicted | train MdAPE | predicted MdAPE | "
        "measured/predicted p10 / p50 / p90 | in 10-90% band | suspect | target | met |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for label, r, _ in results:
        suspect = ", ".join(f"{s['field']} at {s['bound']}" for s in r["suspect"]) or "-"
        lines.append(
            f"| {label} | {r['rows_train']} | {r['rows_test']} | {100 * r['train_mdape']:.1f}% | "
            f"{100 * r['test_mdape']:.1f}% | {_ratio(r['test_ratio'])} | "
            f"{100 * r['band_coverage']:.0f}% | {suspect} | 12% | "
            f"{'yes' if r['test_mdape'] <= 0.12 else 'NO'} |"
        )
    lines += [
        "",
        "Fitted values per training side (spread: |difference| over the bound span, per split):",
        "",
        "| fit on | " + " | ".join(fields) + " |",
        "|---|" + "---:|" * len(fields),
    ]
    for label, r, stability in results:
        cells = []
        for f in fields:
            spread = f" ({stability[f]['spread']:.2f})" if stability else ""
            cells.append(f"{r['fitted'][f]:g}{spread}")
        lines.append(f"| {label.split(' -> ')[0]} | " + " | ".join(cells) + " |")
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    lines += ["", f"Fits took {elapsed:.1f} s in all; load average (uptime) {load}."]
    return "\n".join(lines)


def _signed(measured: np.ndarray, predicted: np.ndarray) -> str:
    ratio = measured / predicted
    ape = np.abs(predicted - measured) / measured
    return f"{len(ratio)} | {np.median(ratio):.3f} | {100 * np.median(ape):.1f}%"


def regime_section() -> str:
    """Markdown table: median signed ratio measured / predicted per regime (GEMM rows, A100):
    small vs large kernels, k <= 512 vs larger, single-wave vs multi-wave, and decode attention
    per kernel the library picks."""
    a100 = preset("a100-sxm")
    gemm = load_measured("gemm")
    measured = gemm["latency_us"].to_numpy()
    predicted = predict_kernels(gemm, a100)
    m, n, k = (gemm[c].cast(float).to_numpy() for c in ("m", "n", "k"))
    _, tiles = best_gemm(a100, "bf16", m, n, k)
    count = np.ceil(m / tiles[:, 0]) * np.ceil(n / tiles[:, 1]) * tiles[:, 3]
    single = count <= a100.units_per_core
    regimes = [
        ("GEMM, all", np.ones(len(m), dtype=bool)),
        ("GEMM, small (measured < 20 us)", measured < 20),
        ("GEMM, large (>= 20 us)", measured >= 20),
        ("GEMM, fixed-cost dominated (< 5 us)", measured < 5),
        ("GEMM, k <= 512", k <= 512),
        ("GEMM, k > 512", k > 512),
        ("GEMM, single wave", single),
        ("GEMM, multi-wave", ~single),
    ]
    lines = [
        "| regime | rows | median measured/predicted | MdAPE |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {name} | {_signed(measured[sel], predicted[sel])} |" for name, sel in regimes]
    attention = load_measured("attention")
    decode = attention.filter(pl.col("op") == "attention_decode")
    measured = decode["latency_us"].to_numpy()
    predicted = predict_kernels(decode, a100)
    plausible = measured >= fastest_possible_us(decode, a100)
    cols = [decode[c].to_numpy() for c in ("batch", "kv_len", "heads", "kv_heads")]
    packed = trtllm_packs_query_heads(a100, *cols)
    for name, sel in (("decode attention, packed (XQA)", packed),
                      ("decode attention, per head (MHA)", ~packed)):  # fmt: skip
        sel = sel & plausible
        lines.append(f"| {name} | {_signed(measured[sel], predicted[sel])} |")
    return "\n".join(lines)


def schedule_section() -> str:
    """Markdown table: the schedule choice of `calibrate` on the A100 GEMM tables (training loss
    of the fitted envelope with each candidate GEMM library, stream-K included)."""
    a100 = preset("a100-sxm")
    tables = (
        ("TRT-LLM GEMMs", load_measured("gemm")),
        ("Vidur layer-op GEMMs", load_measured("layer_ops").filter(pl.col("op") == "gemm")),
    )
    choices = [(label, calibrate(frame, a100).choice) for label, frame in tables]
    names = list(choices[0][1]["loss"])
    lines = [
        "| table | " + " | ".join(f"`{n}` loss" for n in names) + " | chosen |",
        "|---|" + "---:|" * len(names) + "---|",
    ]
    for label, choice in choices:
        cells = " | ".join(f"{choice['loss'][n]:.4f}" for n in names)
        lines.append(f"| {label} | {cells} | `{choice['chosen']}` |")
    return "\n".join(lines)


def main(transfer_only: bool = False) -> None:
    """Write every section (`transfer_only`: the calibration transfer's alone)."""
    write_section(
        "compile-transfer", "Compile-plan model: calibration transfer on the A100 data",
        f"{COMMAND} --transfer", transfer_section(),
    )  # fmt: skip
    if transfer_only:
        return
    load_before = os.getloadavg()[0]
    speed = speed_section()
    speed += (
        f"\n\n1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after "
        f"(on {os.cpu_count()} CPUs): other work on the machine slows these figures."
    )
    write_section("compile-speed", "Compile-plan model: speed", COMMAND, speed)
    write_section(
        "compile-accuracy", "Compile-plan model: accuracy on the A100 data", COMMAND,
        accuracy_section(),
    )  # fmt: skip
    write_section(
        "compile-regimes", "Compile-plan model: signed error per regime (A100)", COMMAND,
        regime_section(),
    )  # fmt: skip
    write_section(
        "compile-schedules", "Compile-plan model: GEMM schedule choice on the A100 data", COMMAND,
        schedule_section(),
    )  # fmt: skip


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line: every section, or (`--transfer`) the transfer's alone."""
    parser = argument_parser("benchmarks.bench_compile", __doc__)
    parser.add_argument(
        "--transfer", action="store_true", help="only the calibration transfer section"
    )
    main(transfer_only=parser.parse_args(argv).transfer)


if __name__ == "__main__":
    cli()
