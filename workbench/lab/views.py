"""What the Baseline, Diagnose and Tune steps show, derived from lab runs as plain data.

Textual-free: rows of text and arrays for charts, so tests can check them without a screen.
Every figure is read from a run's summary (the `workbench run --json` contract), its profiles
or the model's service table; thresholds come from the bottleneck classifier's own rules.
Times in ms, rates per second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from packets.schema import Packet
from triage import units
from workbench.lab.engine import LabRun, ServingRun

DRIVER_PART = {"placement": "imbalance", "fallback": "fallback", "contention": "contention"}
"""Counterfactual driver -> the latency part it shows up as."""


ms = units.ms  # '12.34 ms' ('n/a' for None)


@dataclass(frozen=True)
class Verdict:
    """One SLA line: what is checked, its value and target as text, and whether it holds
    (None when the packet sets no target)."""

    label: str
    value: str
    target: str
    ok: bool | None


def tail_first(summary: dict) -> list[tuple[str, str]]:
    """(label, value) of latency, tail first: p99, p95, then p50, mean and max."""
    lat = summary["latency_ms"]
    return [(k, ms(lat[k])) for k in ("p99", "p95", "p50", "mean", "max")]


def sla_verdicts(summary: dict, packet: Packet) -> list[Verdict]:
    """The SLA checks of a run (p99, p95, throughput) against the packet's targets."""
    sla, lat, ok = packet.inputs.sla, summary["latency_ms"], summary["sla"]
    minimum = sla.min_throughput_per_s
    return [
        Verdict("p99", ms(lat["p99"]), f"<= {sla.p99_ms:g} ms", ok["p99_ok"]),
        Verdict("p95", ms(lat["p95"]), f"<= {sla.p95_ms:g} ms", ok["p95_ok"]),
        Verdict(
            "throughput",
            f"{summary['throughput_per_s']:,.1f}/s",
            f">= {minimum:g}/s" if minimum is not None else "no target",
            ok["throughput_ok"],
        ),
    ]


SERVING_TAILS = (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"), ("latency", "latency_ms"))
"""(label, summary key) of a serving run's tails, in the order they are shown."""


def serving_tails(summary: dict) -> list[tuple[str, list[str]]]:
    """(label, [p99, p95, p50]) of a serving run's TTFT, TPOT and end-to-end latency, tail
    first, as text."""
    return [(label, [ms(summary[key][p]) for p in ("p99", "p95", "p50")])
            for label, key in SERVING_TAILS]  # fmt: skip


def serving_verdicts(summary: dict, packet: Packet) -> list[Verdict]:
    """The SLA checks of a serving run (latency p99 and p95, TTFT p95, TPOT p95) against the
    packet's targets ('no target' where it sets none)."""
    sla, ok = packet.inputs.sla, summary["sla"]
    checks = (
        ("p99", summary["latency_ms"]["p99"], sla.p99_ms, "p99_ok"),
        ("p95", summary["latency_ms"]["p95"], sla.p95_ms, "p95_ok"),
        ("TTFT p95", summary["ttft_ms"]["p95"], sla.ttft_p95_ms, "ttft_p95_ok"),
        ("TPOT p95", summary["tpot_ms"]["p95"], sla.tpot_p95_ms, "tpot_p95_ok"),
    )
    return [
        Verdict(label, ms(value), f"<= {target:g} ms" if target is not None else "no target",
                ok[key])
        for label, value, target, key in checks
    ]  # fmt: skip


def serving_throughput(summary: dict) -> str:
    """Tokens/s, requests/s and preemptions of a serving run, one line."""
    tokens, rate = summary["tokens_per_s"], summary["throughput_per_s"]
    return (
        (f"{tokens:,.0f} tokens/s" if tokens is not None else "n/a tokens/s")
        + (f" ({rate:,.2f} requests/s)" if rate is not None else "")
        + f" · {summary['preemptions']:,} preemptions"
    )


def meets_sla(summary: dict) -> bool:
    """True when every SLA target the packet sets holds."""
    return all(v is not False for v in summary["sla"].values())


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline compile plan -> runtime queue -> core placement -> completion,
    with the figures that describe it (text with units)."""

    name: str
    figures: tuple[str, ...]


def mean_batch(run: LabRun) -> float:
    """Mean requests per dispatched batch in the measurement window."""
    sizes, counts = run.profiles.batch_sizes, run.profiles.batch_counts
    total = counts.sum()
    return float((sizes * counts).sum() / total) if total else 0.0


def pipeline(run: LabRun, packet: Packet, placement: str) -> list[Stage]:
    """The four stages of a run, each with its figures."""
    s = run.summary
    launches = s.get("launches_per_request")
    util = np.asarray(s["core_utilization"])
    fallback = run.buckets.fallback_share if run.buckets is not None else s["fallback_rate"]
    if launches is None:  # a pinned service distribution: no kernels are modelled
        compile_figures: tuple[str, ...] = (
            "service times pinned",
            "(no kernels modelled)",
            f"fallback {s['fallback_rate']:.0%} of requests",
        )
    else:
        compile_figures = (
            f"{run.kernels_per_layer} kernels x {run.layers} layers",
            f"{launches:.1f} launches/req",
            f"fallback {fallback:.0%} of mix",
        )
    hbm = s.get("hbm_peak_demand_ratio")
    return [
        Stage("compile plan", compile_figures),
        Stage(
            "runtime queue",
            (
                f"wait p99 {s['queue_wait_ms']['p99']:,.1f} ms",
                f"wait mean {s['queue_wait_ms']['mean']:,.1f} ms",
                f"batch mean {mean_batch(run):.1f}",
            ),
        ),
        Stage(
            "core placement",
            (
                f"{placement}, {len(util)} cores",
                f"util {util.min():.0%}-{util.max():.0%}",
                f"Jain {s['fairness_jain']:.3f}",
            ),
        ),
        Stage(
            "completion",
            (
                f"p99 {s['latency_ms']['p99']:,.1f} ms",
                f"{s['throughput_per_s']:,.1f}/s",
                f"HBM peak {hbm:.2f}x" if hbm is not None else "HBM n/a (pinned)",
            ),
        ),
    ]


@dataclass(frozen=True)
class Branch:
    """One debug branch of the Diagnose checklist: its question, whether the run clears it,
    and the finding behind that."""

    title: str
    clear: bool
    finding: str


def _top_parts(composition: dict, count: int = 3) -> str:
    from model.runtime.tail import COMPONENTS

    parts = sorted(COMPONENTS, key=lambda c: -composition[c])[:count]
    return ", ".join(f"{c} {composition[c]:,.1f}" for c in parts) + " ms"


def checklist(summary: dict, packet: Packet) -> list[Branch]:
    """The three debug branches, tail first. A branch is clear when its classes score below
    the classifier's secondary threshold (model.runtime.bottleneck.SECONDARY_SHARE) in the p99
    tail; the tail branch is clear when the SLA's p99 and p95 hold."""
    from model.runtime.bottleneck import SECONDARY_SHARE

    sla, lat = packet.inputs.sla, summary["latency_ms"]
    attribution = summary["tail_attribution_ms"]
    slowest, drops = attribution["slowest_1pct"], attribution["counterfactual"]
    scores = summary["classification"]["scores_p99_tail"]
    util = np.asarray(summary["core_utilization"])
    hbm = summary.get("hbm_peak_demand_ratio")
    p99_drop = drops["p99_drop_if_off_ms"]
    memory_score = max(scores["memory bandwidth"], scores["SRAM spill"])
    return [
        Branch(
            "Inspect the tail first",
            summary["sla"]["p99_ok"] is not False and summary["sla"]["p95_ok"] is not False,
            f"p99 {lat['p99']:,.1f} ms (SLA {sla.p99_ms:g}), p95 {lat['p95']:,.1f} ms "
            f"(SLA {sla.p95_ms:g}); slowest 1%: {_top_parts(slowest)}",
        ),
        Branch(
            "Check fairness across streams and cores",
            scores["core imbalance"] < SECONDARY_SHARE,
            f"Jain {summary['fairness_jain']:.3f}, utilization {util.min():.0%}-{util.max():.0%}; "
            f"imbalance {slowest['imbalance']:,.1f} ms of the slowest 1%; p99 "
            f"{0.0 - p99_drop['placement']:+,.1f} ms with pooled placement",
        ),
        Branch(
            "Validate fusion against memory constraints",
            memory_score < SECONDARY_SHARE,
            (f"HBM peak demand {hbm:.2f}x bandwidth; " if hbm is not None else "")
            + f"contention {slowest['contention']:,.1f} ms, spill {slowest['spill']:,.1f} ms of "
            f"the slowest 1%; p99 {0.0 - p99_drop['contention']:+,.1f} ms without contention",
        ),
    ]


@dataclass(frozen=True)
class DriverBars:
    """Tail-latency drivers as two bar series over the same parts.

    Attributes:
        parts: latency parts (queueing, batching, imbalance, fallback, ...).
        slowest_1pct_ms: mean of each part over the slowest 1% of requests, ms.
        p99_drop_ms: Shapley share of the p99 drop if the part's driver were off, ms (0 for
            parts with no counterfactual).
    """

    parts: tuple[str, ...]
    slowest_1pct_ms: np.ndarray
    p99_drop_ms: np.ndarray


def driver_bars(summary: dict) -> DriverBars:
    """The tail-attribution bars of a run (composition and counterfactual, both ways)."""
    from model.runtime.tail import COMPONENTS

    attribution = summary["tail_attribution_ms"]
    slowest = attribution["slowest_1pct"]
    drop = {
        DRIVER_PART[d]: v for d, v in attribution["counterfactual"]["p99_drop_if_off_ms"].items()
    }
    return DriverBars(
        parts=tuple(COMPONENTS),
        slowest_1pct_ms=np.array([slowest[c] for c in COMPONENTS], dtype=np.float64),
        p99_drop_ms=np.array([drop.get(c, 0.0) for c in COMPONENTS], dtype=np.float64),
    )


@dataclass(frozen=True)
class Comparison:
    """A configuration's headline against the baseline's (ms, per second; changes signed)."""

    name: str
    p99_ms: float
    p95_ms: float
    throughput_per_s: float
    p99_change_ms: float
    p95_change_ms: float
    throughput_change_per_s: float
    meets_sla: bool
    primary: str


def compare(run: LabRun, baseline: LabRun) -> Comparison:
    """`run`'s p99, p95 and throughput and their changes against `baseline`."""
    s, b = run.run, baseline.run
    return Comparison(
        name=run.name,
        p99_ms=s.latency_ms.p99,
        p95_ms=s.latency_ms.p95,
        throughput_per_s=s.throughput_per_s,
        p99_change_ms=s.latency_ms.p99 - b.latency_ms.p99,
        p95_change_ms=s.latency_ms.p95 - b.latency_ms.p95,
        throughput_change_per_s=s.throughput_per_s - b.throughput_per_s,
        meets_sla=meets_sla(run.summary),
        primary=s.classification["primary"]["class"],
    )


def headline_line(comparison: Comparison) -> str:
    """'p99 125.83 ms (-79.14) · p95 ... · 398.2/s (+1.1)' for status lines."""
    c = comparison
    return (
        f"p99 {ms(c.p99_ms)} ({c.p99_change_ms:+,.2f}) · p95 {ms(c.p95_ms)} "
        f"({c.p95_change_ms:+,.2f}) · {c.throughput_per_s:,.1f}/s "
        f"({c.throughput_change_per_s:+,.1f})"
    )


def serving_lines(working: ServingRun, baseline: ServingRun) -> list[str]:
    """A serving run against the baseline's, one line each for TTFT and TPOT (p99, p95 with
    their signed changes in ms) and one for tokens/s and preemptions:
    'TTFT p99 410.20 ms (-284.0) · p95 300.1 ms (-135.2)'."""
    s, b = working.summary, baseline.summary
    lines = []
    for label, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms")):
        parts = []
        for p in ("p99", "p95"):
            now, then = s[key][p], b[key][p]
            change = f" ({now - then:+,.2f})" if now is not None and then is not None else ""
            parts.append(f"{p} {ms(now)}{change}")
        lines.append(f"{label} " + " · ".join(parts))
    tokens, then = s["tokens_per_s"], b["tokens_per_s"]
    change = f" ({tokens - then:+,.0f})" if tokens is not None and then is not None else ""
    lines.append(
        (f"{tokens:,.0f} tokens/s{change}" if tokens is not None else "n/a tokens/s")
        + f" · {s['preemptions']:,} preemptions"
    )
    return lines


def _engine_range(values: np.ndarray, fmt: str) -> str:
    low, high = format(values.min(), fmt), format(values.max(), fmt)
    return low if low == high else f"{low}-{high}"


def engine_load_line(working: ServingRun, baseline: ServingRun) -> str:
    """Per-engine load of the working configuration with the baseline's in brackets, one
    line: each engine's busy share and output tokens/s (a range over several engines), and
    the queue's peak (requests waiting for a first iteration)."""
    w, b = working.profiles, baseline.profiles
    engines = "engine" if len(w.engine_busy) == 1 else f"{len(w.engine_busy)} engines,"
    return (
        f"Per {engines} busy {_engine_range(w.engine_busy, '.0%')} "
        f"({_engine_range(b.engine_busy, '.0%')}) · "
        f"{_engine_range(w.engine_tokens_per_s, ',.0f')} tokens/s "
        f"({_engine_range(b.engine_tokens_per_s, ',.0f')}) · "
        f"queue peak {w.queue_peak.max():,.0f} ({b.queue_peak.max():,.0f}); baseline in brackets"
    )
