"""Packet facts each step is built on, as plain label/value rows (textual-free).

The Baseline and Mapping steps show these beside the model's results: they are read from the
packet (or derived by plain arithmetic named in each docstring), never estimated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from packets.schema import Config, GemmTile, Packet


@dataclass(frozen=True)
class Fact:
    """One row: what it is, and its value as text with its unit."""

    label: str
    value: str


@dataclass(frozen=True)
class ShapeMapping:
    """Where each runtime shape runs: the smallest compiled bucket that holds it.

    Arrays are aligned with `shapes` (the packet's runtime seq_len values, in packet order).
    Attributes:
        shapes: (S,) int64 runtime shapes.
        weights: (S,) float64 traffic share of each shape.
        compiled_shape: (S,) int64 bucket the shape is padded to (the shape itself on fallback).
        fallback: (S,) bool, True where no compiled bucket is large enough (generic path).
        padding: (S,) float64 share of the bucket's tokens that are padding, 0..1.
    """

    shapes: np.ndarray
    weights: np.ndarray
    compiled_shape: np.ndarray
    fallback: np.ndarray
    padding: np.ndarray

    @property
    def fallback_share(self) -> float:
        """Share of requests (by weight) that take the fallback path."""
        return float(self.weights[self.fallback].sum())


def shape_mapping(runtime: list[int], weights: list[float], compiled: list[int]) -> ShapeMapping:
    """Map runtime shapes to compiled buckets (buckets ascending, as packets require)."""
    shapes = np.asarray(runtime, dtype=np.int64)
    buckets = np.asarray(compiled, dtype=np.int64)
    index = np.searchsorted(buckets, shapes, side="left")
    fallback = index >= len(buckets)
    compiled_shape = np.where(fallback, shapes, buckets[np.minimum(index, len(buckets) - 1)])
    padding = 1.0 - shapes / compiled_shape
    return ShapeMapping(
        shapes, np.asarray(weights, dtype=np.float64), compiled_shape, fallback, padding
    )


def _num(value: float | int | None, unit: str = "") -> str:
    if value is None:
        return "not set"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip()


def _tiles(config: Config) -> str:
    if not config.tiles:
        return "autotuned (none pinned)"
    parts = []
    for op, tile in sorted(config.tiles.items()):
        if isinstance(tile, GemmTile):
            parts.append(f"{op} {tile.m}x{tile.n}x{tile.k}")
        elif isinstance(tile, str):
            parts.append(f"{op} auto")
        else:
            parts.append(f"{op} q{tile.q}/kv{tile.kv}")
    return ", ".join(parts)


def _fusion(config: Config) -> str:
    fusion = config.fusion
    return fusion if isinstance(fusion, str) else f"{len(fusion)} explicit groups"


def _hardware(packet: Packet) -> str:
    hw = packet.inputs.hardware
    where = f"preset {hw.preset}" if hw.preset else (f"file {hw.file}" if hw.file else "explicit")
    extra = f", {hw.cores} cores" if hw.cores else ""
    return where + extra


def _arrivals(packet: Packet) -> str:
    arrivals = packet.inputs.workload.arrivals
    if arrivals.process == "trace":
        return f"trace {arrivals.trace}"
    cv = f", cv {arrivals.cv:g}" if arrivals.cv is not None else ""
    return f"{arrivals.process}, {_num(arrivals.rate_per_s, '/s')}{cv}"


def _sla(packet: Packet) -> str:
    sla = packet.inputs.sla
    text = f"p95 <= {_num(sla.p95_ms, 'ms')}, p99 <= {_num(sla.p99_ms, 'ms')}"
    if sla.min_throughput_per_s is not None:
        text += f", >= {_num(sla.min_throughput_per_s, '/s')}"
    return text


def _batching(config: Config) -> str:
    policy = config.batch_policy
    text = f"max {policy.max_batch}, wait <= {_num(policy.max_queue_delay_ms, 'ms')}"
    return text + (", bucketed" if policy.bucketing else "")


def baseline_facts(packet: Packet) -> list[Fact]:
    """The baseline configuration and the load it is measured under."""
    base = packet.baseline
    service = base.service
    return [
        Fact("Anchor metric", packet.anchor_metric),
        Fact("SLA", _sla(packet)),
        Fact("Arrivals", _arrivals(packet)),
        Fact(
            "Requests",
            f"{packet.inputs.workload.requests} (warm-up "
            f"{packet.inputs.workload.warmup_fraction:.0%} dropped)",
        ),
        Fact("Hardware", _hardware(packet)),
        Fact("Fusion", _fusion(base)),
        Fact("Tiles", _tiles(base)),
        Fact("Batching", _batching(base)),
        Fact("Placement", base.placement),
        Fact(
            "Service times",
            "compile-plan model"
            if service.source == "model"
            else f"{service.dist}, mean {_num(service.mean_ms, 'ms')}",
        ),
        Fact("Seed", str(packet.seed)),
    ]


def mapping_facts(packet: Packet) -> list[Fact]:
    """Compiled buckets against the runtime shape mix (padding share = 1 - shape/bucket)."""
    base = packet.baseline
    mix = packet.inputs.workload.shapes.seq_len
    mapping = shape_mapping(mix.values, mix.weights, base.compiled_shapes.seq_len)
    facts = [Fact("Compiled buckets", ", ".join(map(str, base.compiled_shapes.seq_len)))]
    for shape, weight, bucket, fell, pad in zip(
        mapping.shapes,
        mapping.weights,
        mapping.compiled_shape,
        mapping.fallback,
        mapping.padding,
        strict=True,
    ):
        where = "fallback path" if fell else f"bucket {bucket}, {pad:.0%} padding"
        facts.append(Fact(f"seq_len {shape} ({weight:.0%})", where))
    facts.append(Fact("Traffic on fallback", f"{mapping.fallback_share:.1%}"))
    return facts
