"""The fusion & tile-plan worksheet: per kernel, what it runs, costs and is bound by.

`worksheet(...)` evaluates a plan and its baseline at one point (batch size, seq_len) and returns
a plain dict, the stable `--json` form; `worksheet_markdown(sheet)` renders it for `--markdown`.

JSON schema (`"schema": "handoff-worksheet/1"`; all numbers are plain ints/floats; every figure
counts one pass of the block unless its key says `request`):

    schema            "handoff-worksheet/1"
    hardware          {name, cores, units_per_core, sram_kib_per_unit}
    block             {kind, phase, dtype, hidden, heads, kv_heads, head_dim, ffn_hidden, layers}
    point             {batch, seq_len, tokens}: tokens = GEMM rows m
    fusion            [[op, ...], ...]  the plan's kernel groups
    baseline_fusion   [[op, ...], ...]
    bands             where the kernels' error bands come from (provenance text)
    kernels           list, one per kernel of the plan, in launch order:
        ops                [op, ...]
        tiles              {op: tile label}  GEMM `MxNxK[/sS]`, attention `qQxkvKV[/sS]`
        launches           1
        flops              useful FLOPs
        exec_flops         FLOPs executed, tile padding included
        hbm_bytes          bytes read from and written to HBM
        spill_bytes        part of hbm_bytes from working sets overflowing SRAM
        reuse_ratio        operand bytes consumed by compute / hbm_bytes
        sram_kib           SRAM one unit holds (largest phase), KiB
        sram_capacity_kib  the unit's SRAM, KiB
        launch_us          host launch overhead, us
        device_us          device floor + phases, us
        time_us            launch_us + device_us
        band_us            [low, high] 10-90% band of time_us: launch_us + device_us x the
                           p10 / p90 of measured/predicted among residuals of the same op class
                           and predicted-time class (regimes.py)
        avg_hbm_gbs        HBM bytes over device time, GB/s
        peak_hbm_gbs       highest HBM demand of a phase (its burst rate), GB/s
        bound              launch | compute | memory | spill
        baseline_ops       ops of the baseline kernels this kernel replaces (sharing an op)
        baseline_bound     aggregate bound of those baseline kernels (largest summed part)
        baseline_bounds    [bound, ...] of each of those baseline kernels
        bottleneck_shift   "<before> -> <bound>"; before joins the baseline kernels' distinct
                           bounds with "+", the one holding the most time first
    totals:
        launches_per_block, baseline_launches_per_block
        launch_overhead_saved_us   baseline minus plan (host launch + device floor), us
        hbm_bytes, baseline_hbm_bytes, hbm_bytes_saved, spill_bytes
        block_time_us, baseline_block_time_us
        request_time_us, baseline_request_time_us   x layers
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict

import numpy as np

from model.compiler.blocks import BlockSpec
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import HardwareEnvelope
from model.compiler.op_sizes import tokens
from model.compiler.plan import KernelCost, evaluate_plan, tile_label
from model.compiler.regimes import ErrorBands, shipped_bands
from model.compiler.tiles import Tile, resolve_tiles

GEMM_OPS = ("qkv_proj", "out_proj", "gate_up_proj", "down_proj")
"""Block ops that are GEMMs (blocks.gemm_dims)."""


def band_op(block: BlockSpec, ops: Sequence[str]) -> str:
    """The measured-kernel op class whose residuals give a kernel's error band: attention
    (prefill or decode by the block's phase) when the kernel runs it, else gemm when it runs a
    GEMM, else elementwise."""
    if "attention" in ops:
        return f"attention_{block.phase}"
    return "gemm" if any(op in GEMM_OPS for op in ops) else "elementwise"


SCHEMA = "handoff-worksheet/1"


def _aggregate_bound(kernels: Sequence[KernelCost]) -> str:
    """What limits a set of kernels together: the largest of summed launch (host + floor),
    compute-bound and memory-bound time; memory becomes spill when spill is most of it."""
    launch = sum(float(k.launch_us[0] + k.floor_us[0]) for k in kernels)
    compute = sum(float(k.compute_us[0]) for k in kernels)
    memory = sum(float(k.memory_us[0]) for k in kernels)
    spill = sum(float(k.spill_bytes[0]) for k in kernels)
    memory_bytes = sum(float(k.memory_bound_bytes[0]) for k in kernels)
    name = ("launch", "compute", "memory")[int(np.argmax([launch, compute, memory]))]
    if name == "memory" and spill > 0 and spill >= 0.5 * memory_bytes:
        return "spill"
    return name


def _shift(replaced: Sequence[KernelCost], bound: str) -> str:
    """`before -> after`; before lists the replaced kernels' distinct bounds, the one holding
    the most time first (e.g. `memory+launch -> memory`)."""
    share: dict[str, float] = {}
    for k in replaced:
        name = str(k.bound()[0])
        share[name] = share.get(name, 0.0) + float(k.time_us[0])
    before = "+".join(sorted(share, key=lambda n: -share[n]))
    return f"{before} -> {bound}"


def _kernel_row(
    k: KernelCost, hw: HardwareEnvelope, baseline: list[KernelCost], band_ratios: np.ndarray
) -> dict:
    replaced = [b for b in baseline if set(b.ops) & set(k.ops)]
    launch, device = float(k.launch_us[0]), float(k.device_us[0])
    bound = str(k.bound()[0])
    baseline_bound = _aggregate_bound(replaced)
    return {
        "ops": list(k.ops),
        "tiles": {op: tile_label(op, rows[0]) for op, rows in k.tiles.items()},
        "launches": 1,
        "flops": float(k.flops[0]),
        "exec_flops": float(k.exec_flops[0]),
        "hbm_bytes": float(k.hbm_bytes[0]),
        "spill_bytes": float(k.spill_bytes[0]),
        "reuse_ratio": float(k.reuse_ratio()[0]),
        "sram_kib": float(k.sram_bytes[0] / 1024.0),
        "sram_capacity_kib": float(hw.sram_kib_per_unit),
        "launch_us": float(k.launch_us[0]),
        "device_us": float(k.device_us[0]),
        "time_us": float(k.time_us[0]),
        "band_us": [launch + device * band_ratios[0], launch + device * band_ratios[2]],
        "avg_hbm_gbs": float(k.average_gbs()[0]),
        "peak_hbm_gbs": float(k.peak_gbs[0]),
        "bound": bound,
        "baseline_ops": [op for b in replaced for op in b.ops],
        "baseline_bound": baseline_bound,
        "baseline_bounds": [str(b.bound()[0]) for b in replaced],
        "bottleneck_shift": _shift(replaced, bound),
    }


def worksheet(
    block: BlockSpec,
    hardware: HardwareEnvelope,
    fusion: str | Sequence[Sequence[str]],
    tiles: Mapping[str, Tile | Mapping] | None,
    batch: int,
    seq_len: int,
    *,
    baseline_fusion: str | Sequence[Sequence[str]] = "none",
    baseline_tiles: Mapping[str, Tile | Mapping] | None = None,
    bands: ErrorBands | None = None,
) -> dict:
    """The worksheet of a plan against its baseline at one (batch, seq_len); see module doc.
    bands: the error bands of the kernels' device time (default: the shipped A100 residual
    bands, `regimes.shipped_bands`)."""
    bands = shipped_bands() if bands is None else bands
    if not (isinstance(batch, int) and batch >= 1 and isinstance(seq_len, int) and seq_len >= 1):
        raise ValueError(f"worksheet: batch and seq_len must be whole numbers >= 1, got "
                         f"{batch!r}, {seq_len!r}")  # fmt: skip
    groups = fusion_groups(block, fusion)
    base_groups = fusion_groups(block, baseline_fusion)
    b, s = np.array([batch]), np.array([seq_len])
    plan = evaluate_plan(block, hardware, groups, resolve_tiles(block, hardware, tiles), b, s)
    base = evaluate_plan(
        block, hardware, base_groups, resolve_tiles(block, hardware, baseline_tiles), b, s
    )
    ratios = bands.ratios(
        np.array([band_op(block, k.ops) for k in plan]),
        np.array([float(k.device_us[0]) for k in plan]),
    )
    rows = [_kernel_row(k, hardware, base, r) for k, r in zip(plan, ratios, strict=True)]

    def fixed(ks: list[KernelCost]) -> float:
        return sum(float(k.launch_us[0] + k.floor_us[0]) for k in ks)

    block_time = sum(float(k.time_us[0]) for k in plan)
    base_time = sum(float(k.time_us[0]) for k in base)
    hbm = sum(float(k.hbm_bytes[0]) for k in plan)
    base_hbm = sum(float(k.hbm_bytes[0]) for k in base)
    return {
        "schema": SCHEMA,
        "hardware": {
            "name": hardware.name,
            "cores": hardware.cores,
            "units_per_core": hardware.units_per_core,
            "sram_kib_per_unit": float(hardware.sram_kib_per_unit),
        },
        "block": asdict(block),
        "point": {"batch": batch, "seq_len": seq_len, "tokens": int(tokens(block, b, s)[0])},
        "fusion": [list(g) for g in groups],
        "baseline_fusion": [list(g) for g in base_groups],
        "kernels": rows,
        "bands": bands.provenance,
        "totals": {
            "launches_per_block": len(plan),
            "baseline_launches_per_block": len(base),
            "launch_overhead_saved_us": fixed(base) - fixed(plan),
            "hbm_bytes": hbm,
            "baseline_hbm_bytes": base_hbm,
            "hbm_bytes_saved": base_hbm - hbm,
            "spill_bytes": sum(float(k.spill_bytes[0]) for k in plan),
            "block_time_us": block_time,
            "baseline_block_time_us": base_time,
            "request_time_us": block_time * block.layers,
            "baseline_request_time_us": base_time * block.layers,
        },
    }


def worksheet_markdown(sheet: dict) -> str:
    """The worksheet as markdown (what `workbench worksheet --markdown` prints)."""
    point, totals = sheet["point"], sheet["totals"]
    blk = sheet["block"]
    lines = [
        f"Fusion & tile-plan worksheet: {blk['kind']} {blk['phase']} {blk['dtype']} on "
        f"{sheet['hardware']['name']}, batch {point['batch']}, seq_len {point['seq_len']} "
        f"({point['tokens']} tokens)",
        "",
        "| # | ops | tiles | launches | GFLOP | HBM MB | reuse | SRAM KiB (cap) | time us | "
        "10-90% us | bound | shift |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for i, k in enumerate(sheet["kernels"]):
        tiles = ", ".join(f"{op} {label}" for op, label in k["tiles"].items()) or "-"
        spill = f" (spill {k['spill_bytes'] / 1e6:.1f})" if k["spill_bytes"] else ""
        lines.append(
            f"| {i} | {' + '.join(k['ops'])} | {tiles} | {k['launches']} | "
            f"{k['flops'] / 1e9:.3f} | {k['hbm_bytes'] / 1e6:.2f}{spill} | {k['reuse_ratio']:.2f} "
            f"| {k['sram_kib']:.0f} ({k['sram_capacity_kib']:.0f}) | {k['time_us']:.2f} | "
            f"{k['band_us'][0]:.2f}-{k['band_us'][1]:.2f} | {k['bound']} | "
            f"{k['bottleneck_shift']} |"
        )
    lines += [
        "",
        f"- Launches per block: {totals['launches_per_block']} "
        f"(baseline {totals['baseline_launches_per_block']})",
        f"- Launch overhead saved: {totals['launch_overhead_saved_us']:.2f} us per block",
        f"- HBM bytes: {totals['hbm_bytes'] / 1e6:.2f} MB "
        f"(baseline {totals['baseline_hbm_bytes'] / 1e6:.2f} MB, saved "
        f"{totals['hbm_bytes_saved'] / 1e6:.2f} MB; spill {totals['spill_bytes'] / 1e6:.2f} MB)",
        f"- Block time: {totals['block_time_us']:.2f} us "
        f"(baseline {totals['baseline_block_time_us']:.2f} us); per request x{blk['layers']}: "
        f"{totals['request_time_us'] / 1e3:.3f} ms "
        f"(baseline {totals['baseline_request_time_us'] / 1e3:.3f} ms)",
        f"- 10-90% band of each kernel's time: measured/predicted of similar measured kernels "
        f"({sheet['bands']})",
    ]
    return "\n".join(lines) + "\n"
