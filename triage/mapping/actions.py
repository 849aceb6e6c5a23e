"""Retuning actions of the mapping report: variants of the compile-only configuration, each
simulated on the same requests, costed, given its evidence rows and ranked by gain per cost
(model/mapping/actions.py says how), plus `action_to_candidate` for the app.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from model.compiler.blocks import OPS, gemm_dims
from model.compiler.calibration import CALIBRATED_FIELDS, Calibration
from model.compiler.hardware import HardwareEnvelope
from model.mapping.actions import SCREENED, gain_per_cost, rank_actions, screen, shape_savings
from model.mapping.adaptation import gain, run_figures
from model.mapping.buckets import bucket_index, bucket_label
from model.mapping.cost import CompiledPlan, retune_cost
from model.mapping.requests import ObservedMix
from model.runtime.workload import RequestStream
from model.telemetry import RequestTelemetry
from packets.load import LoadedPacket
from packets.model_specs import fusion_spec
from packets.schema import Candidate, CompiledShapes, Packet
from triage.scenario import Scenario

EVIDENCE_ROWS = 3
"""Rows of telemetry each action cites (worst first for kernels, first in time for requests)."""

_BY_BUCKET = object()  # kernel evidence default: the rows in the buckets an action touches


@dataclass(frozen=True, eq=False)
class KernelEvidence:
    """Per-row facts about the measured kernels that actions cite.

    Attributes:
        frame: the kernel rows (KERNEL_SCHEMA).
        where: row -> `FILE:LINE` text.
        usable: (rows,) bool, predicted and physically plausible.
        ape, ratio: (rows,) |predicted - measured| / measured and measured / predicted.
        tokens: (rows,) runtime shape of each row in tokens.
    """

    frame: pl.DataFrame
    where: Callable[[int], str]
    usable: np.ndarray
    ape: np.ndarray
    ratio: np.ndarray
    tokens: np.ndarray

    def summary(self, rows: np.ndarray) -> dict | None:
        """Rows, MdAPE, bias and the worst rows among the usable rows selected by `rows`."""
        sel = np.asarray(rows, dtype=bool) & self.usable
        if not sel.any():
            return None
        index = np.flatnonzero(sel)
        worst = index[np.argsort(-self.ape[index], kind="stable")[:EVIDENCE_ROWS]]
        return {
            "rows": int(sel.sum()),
            "mdape": float(np.median(self.ape[sel])),
            "bias": float(np.median(self.ratio[sel]) - 1.0),
            "worst": [{"where": self.where(int(i)), "ape": float(self.ape[i])} for i in worst],
        }


def variant(
    base: Scenario,
    *,
    buckets: list[int] | None = None,
    tiles: dict | None = None,
    hardware: HardwareEnvelope | None = None,
    label: str,
) -> Scenario:
    """`base` with other compiled buckets, tiles or envelope (same requests and policies)."""
    update: dict[str, Any] = {}
    if buckets is not None:
        update["compiled_shapes"] = CompiledShapes.model_validate({"seq_len": sorted(buckets)})
    if tiles is not None:
        update["tiles"] = tiles
    config = base.config.model_copy(update=update)
    runtime = dataclasses.replace(
        base.runtime, compiled_shapes=tuple(config.compiled_shapes.seq_len)
    )
    return dataclasses.replace(
        base, candidate=label, config=config, runtime=runtime, hardware=hardware or base.hardware
    )


def compiled_plan(scenario: Scenario) -> CompiledPlan:
    """What a scenario compiles (for the retuning cost)."""
    fusion = fusion_spec(scenario.config)
    if not isinstance(fusion, str):
        fusion = tuple(tuple(g) for g in fusion)
    pinned = tuple(
        sorted(
            (op, repr(sorted(t.model_dump().items())))
            for op, t in scenario.config.tiles.items()
            if not isinstance(t, str)
        )
    )
    return CompiledPlan(
        scenario.block,
        fusion,
        tuple(int(b) for b in scenario.config.compiled_shapes.seq_len),
        int(scenario.config.batch_policy.max_batch),
        pinned,
    )


def adaptation_cost(before: Scenario, after: Scenario, *, retune_all: bool = False) -> dict:
    """Compile time and memory of going from `before` to `after` (model/mapping/cost.py)."""
    stall = before.config.fallback.compile_stall_ms
    return retune_cost(compiled_plan(before), compiled_plan(after), stall, retune_all=retune_all)


def config_overrides(packet: Packet, scenario: Scenario) -> dict:
    """The candidate overrides that turn the packet's baseline into `scenario.config`."""
    base = packet.baseline.model_dump(mode="json")
    new = scenario.config.model_dump(mode="json")
    out: dict[str, Any] = {}
    for section in ("fusion", "compiled_shapes", "placement", "service"):
        if new[section] != base[section]:
            out[section] = new[section]
    ops = sorted(set(base["tiles"]) | set(new["tiles"]))
    tiles = {op: new["tiles"].get(op, "auto") for op in ops
             if new["tiles"].get(op, "auto") != base["tiles"].get(op, "auto")}  # fmt: skip
    if tiles:
        out["tiles"] = tiles
    for section in ("fallback", "batch_policy"):
        patch = {k: v for k, v in new[section].items() if base[section].get(k) != v}
        if patch:
            out[section] = patch
    if scenario.block.dtype != packet.inputs.precision.dtype:
        out["dtype"] = scenario.block.dtype
    return out


def action_to_candidate(packet: Packet, action: dict) -> dict:
    """Candidate overrides (a dict the packet format accepts under `candidates`) that apply
    `action` to `packet`; the name is made unique among the packet's candidates. Raises a
    one-line ValueError for an action that is not a candidate (recalibrate changes
    inputs.hardware) or overrides the format refuses."""
    overrides = action.get("candidate")
    if overrides is None:
        raise ValueError(
            f"action {action.get('id')!r} changes inputs.hardware, not a candidate: write the "
            "calibrated file with `workbench telemetry calibrate -o FILE` and set "
            "inputs.hardware.file"
        )
    taken = {c.name for c in packet.candidates}
    name, n = overrides["name"], 2
    while name in taken:
        name, n = f"{overrides['name'][:60]}-{n}", n + 1
    out = {**overrides, "name": name}
    try:
        Candidate.model_validate(out)
    except Exception as exc:  # pydantic's ValidationError: keep the first problem, one line
        first = str(exc).splitlines()
        raise ValueError(f"action {action.get('id')!r}: {' '.join(first[:3])}") from None
    return out


def _per_request_ms(scenario: Scenario) -> np.ndarray:
    """(S,) full-batch service time per request at each table shape, ms."""
    table, big_b = scenario.service_table, int(scenario.config.batch_policy.max_batch)
    return table.time_ms[int(table.batch_index(np.array([big_b]))[0])] / big_b


@dataclass(frozen=True, eq=False)
class _Context:
    """What every action needs: the compile-only scenario, its requests and the telemetry."""

    loaded: LoadedPacket
    base: Scenario
    stream: RequestStream
    mix: ObservedMix
    before: dict
    kernels: KernelEvidence | None
    requests: RequestTelemetry | None

    def request_evidence(self, shapes: list[int]) -> dict | None:
        if self.requests is None or not shapes:
            return None
        sel = np.isin(self.mix.seq_len, shapes)
        if not sel.any():
            return None
        latency = self.requests.frame["latency_ms"].to_numpy()[sel]
        rows = np.flatnonzero(sel)[:EVIDENCE_ROWS]
        return {
            "requests": int(sel.sum()),
            "share": float(sel.mean()),
            "observed_p99_ms": float(np.percentile(latency, 99)),
            "first": [self.requests.provenance.where(int(r)) for r in rows],
        }

    def kernel_buckets(self, shapes: list[int]) -> dict | None:
        """Kernel rows in the compile-only buckets these runtime shapes run in now."""
        if self.kernels is None or not shapes:
            return None
        compiled = list(self.base.config.compiled_shapes.seq_len)
        now = set(bucket_index(compiled, np.asarray(shapes, np.float64)).tolist())
        rows = np.isin(bucket_index(compiled, self.kernels.tokens), list(now))
        return self.kernels.summary(rows)

    def build(
        self,
        kind: str,
        ident: str,
        target: dict,
        text: str,
        after: Scenario,
        *,
        figures: dict | None = None,
        won: dict | None = None,
        kernels: Any = _BY_BUCKET,
        extra: dict | None = None,
    ) -> dict:
        """Simulate `after` (unless `figures` are given), cost it and assemble the action;
        `kernels` is the kernel evidence (default: rows in the buckets the action touches)."""
        if figures is None:
            figures = run_figures(after.runtime, after.service_table, self.stream)
        won = won or gain(self.before, figures)
        cost = adaptation_cost(self.base, after, retune_all=kind == "recalibrate")
        now, then = _per_request_ms(self.base), _per_request_ms(after)
        shapes = self.base.service_table.shapes
        weights = self.mix.weights
        changed = np.flatnonzero(np.abs(then - now) > 1e-9 * np.maximum(now, 1.0))
        affected = changed[np.argsort(-weights[changed], kind="stable")][:8]
        compiled = list(self.base.config.compiled_shapes.seq_len)
        model = [
            {
                "seq_len": int(shapes[j]),
                "share": float(weights[j]),
                "runs_now_in": bucket_label(compiled, int(self.base.service_table.bucket[j])),
                "service_ms_per_request_now": float(now[j]),
                "service_ms_per_request_after": float(then[j]),
            }
            for j in sorted(affected)
        ]
        moved = [int(shapes[j]) for j in changed]
        evidence = {
            "model": model,
            "requests": self.request_evidence(moved),
            "kernels": self.kernel_buckets(moved) if kernels is _BY_BUCKET else kernels,
            **(extra or {}),
        }
        is_candidate = kind != "recalibrate"
        overrides = None
        if is_candidate:
            overrides = {"name": ident, "description": text,
                         **config_overrides(self.loaded.packet, after)}  # fmt: skip
        return {
            "id": ident,
            "kind": kind,
            "target": target,
            "description": text,
            "compiled_shapes": [int(s) for s in after.config.compiled_shapes.seq_len],
            "figures": figures,
            "gain": won,
            "cost": cost,
            "gain_per_cost": gain_per_cost(won["p99_ms"], cost["compile_ms"]),
            "evidence": evidence,
            "applies_as": "candidate" if is_candidate else "hardware_file",
            "candidate": overrides,
        }


def _bucket_actions(ctx: _Context) -> list[dict]:
    base = ctx.base
    compiled = sorted(base.config.compiled_shapes.seq_len)
    table, exact = base.service_table, base.all_compiled_table
    values = np.asarray(table.shapes, dtype=np.int64)
    big_b = int(base.config.batch_policy.max_batch)
    savings = shape_savings(table, exact, ctx.mix.weights, big_b)
    actions = []
    for s in screen(values, savings, ~np.isin(values, compiled)):
        after = variant(base, buckets=[*compiled, s], label=f"add-bucket-{s}")
        share = float(ctx.mix.weights[values == s][0])
        now = (
            "fall back to the generic path"
            if s > compiled[-1]
            else (f"pad up to {min(b for b in compiled if b >= s)}")
        )
        text = f"Compile a {s}-token bucket: {share:.1%} of requests are {s} tokens and {now} now."
        actions.append(ctx.build("add_bucket", f"add-bucket-{s}", {"seq_len": s}, text, after))
    above = values[values > compiled[-1]]
    if len(above) > SCREENED:
        above = above[np.unique(np.linspace(0, len(above) - 1, SCREENED).round().astype(int))]
    largest = compiled[-1]
    for v in above.tolist():
        after = variant(base, buckets=[*compiled[:-1], v], label=f"widen-{largest}-to-{v}")
        text = (
            f"Widen the largest bucket from {largest} to {v} tokens: shapes up to {v} stop "
            f"falling back, shapes in the old bucket pad up to {v}."
        )
        ident = f"widen-{largest}-to-{v}"
        actions.append(ctx.build("widen_bucket", ident, {"from": largest, "to": v}, text, after))
    return actions


def _tile_actions(ctx: _Context) -> list[dict]:
    base = ctx.base
    actions = []
    for op, tile in sorted(base.config.tiles.items()):
        if isinstance(tile, str):
            continue
        tiles = {k: v for k, v in base.config.tiles.items() if k != op}
        ident = f"retune-{op.replace('_', '-')}"
        after = variant(base, tiles=tiles, label=ident)
        text = f"Return {op} (pinned {tile.model_dump()}) to the autotuner: a tile per bucket and batch size."
        kernels = None
        if ctx.kernels is not None:
            frame = ctx.kernels.frame
            if OPS[op].kind == "gemm":
                n, k = gemm_dims(base.block, op)
                sel = (frame["op"] == "gemm") & (frame["n"] == n) & (frame["k"] == k)
            else:
                sel = frame["op"] == f"attention_{base.block.phase}"
            kernels = ctx.kernels.summary(sel.fill_null(False).to_numpy())
        actions.append(ctx.build("change_tile", ident, {"op": op}, text, after, kernels=kernels))
    return actions


def _recalibrate(ctx: _Context, calibration: Calibration | None, observed: dict | None):
    if calibration is None or calibration.heldout_mdape >= calibration.original_heldout_mdape:
        return []
    base = ctx.base
    after = variant(base, hardware=calibration.envelope, label="recalibrate")
    figures = run_figures(after.runtime, after.service_table, ctx.stream)
    now, then = ctx.before["latency_ms"]["p99"], figures["latency_ms"]["p99"]
    won = gain(ctx.before, figures)
    for p in ("p95", "p99"):  # the prediction error removed, not a latency change
        now_p, then_p = ctx.before["latency_ms"][p], figures["latency_ms"][p]
        if observed is not None:
            seen = observed[p]["observed_ms"]
            won[f"{p}_ms"] = float(abs(now_p - seen) - abs(then_p - seen))
        else:
            won[f"{p}_ms"] = float(abs(then_p - now_p))
        won[f"{p}_fraction"] = won[f"{p}_ms"] / now_p if now_p else None
    for key in ("throughput_per_s", "throughput_fraction", "capacity_per_s", "capacity_fraction"):
        won[key] = None  # a better model does not make the device faster
    won["basis"] = (
        "p95/p99 prediction error removed against the observed requests"
        if observed is not None
        else "no request telemetry: the size of the p95/p99 correction"
    )
    fitted = ", ".join(f"{k} {calibration.original[k]:g} -> {calibration.fitted[k]:g}"
                       for k in CALIBRATED_FIELDS)  # fmt: skip
    text = (
        f"Recalibrate the envelope ({fitted}): held-out MdAPE "
        f"{calibration.original_heldout_mdape:.1%} -> {calibration.heldout_mdape:.1%}; "
        f"predicted p99 {now:.1f} -> {then:.1f} ms."
    )
    kernels = ctx.kernels.summary(np.ones(len(ctx.kernels.usable), bool)) if ctx.kernels else None
    extra = {"calibration": {"heldout_mdape": calibration.heldout_mdape,
                             "original_heldout_mdape": calibration.original_heldout_mdape}}  # fmt: skip
    return [
        ctx.build(
            "recalibrate",
            "recalibrate",
            {"fields": list(CALIBRATED_FIELDS)},
            text,
            after,
            figures=figures,
            won=won,
            kernels=kernels,
            extra=extra,
        )
    ]


def propose_actions(
    loaded: LoadedPacket,
    base: Scenario,
    stream: RequestStream,
    mix: ObservedMix,
    before: dict,
    kernels: KernelEvidence | None,
    requests: RequestTelemetry | None,
    calibration: Calibration | None,
    observed: dict | None,
) -> list[dict]:
    """Every retuning action worth simulating, simulated, costed and ranked."""
    ctx = _Context(loaded, base, stream, mix, before, kernels, requests)
    actions = [
        *_bucket_actions(ctx),
        *_tile_actions(ctx),
        *_recalibrate(ctx, calibration, observed),
    ]
    return rank_actions(actions)
