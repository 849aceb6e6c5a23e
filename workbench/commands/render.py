"""Plain-text renderings of model results for the command line (tail first, never averages
alone). The app draws the same facts with widgets; these are for terminals and logs."""

from __future__ import annotations

from typing import Any

from packets.safe_text import printable
from triage import units

_ms = units.ms  # '12.34 ms', 'n/a'


def _ok(flag: bool | None) -> str:
    return "n/a" if flag is None else ("ok" if flag else "MISSED")


def run_text(summary: dict[str, Any]) -> str:
    """A run summary: tail first (p99, p95, then p50 and mean), SLA, pipeline, bottleneck."""
    lat, wait, svc = summary["latency_ms"], summary["queue_wait_ms"], summary["service_ms"]
    sla = summary["sla"]
    cls = summary["classification"]
    util = summary["core_utilization"]
    lines = [
        f"{summary['packet']} / {summary['candidate']}  seed {summary['seed']}  "
        f"{summary['measured_requests']:,} of {summary['requests']:,} requests measured",
        "",
        "latency       p99 {p99:>12}  p95 {p95:>12}  p50 {p50:>12}  mean {mean:>12}".format(
            **{k: _ms(lat[k]) for k in ("p99", "p95", "p50", "mean")}
        ),
        "queue wait    p99 {p99:>12}  p95 {p95:>12}  p50 {p50:>12}  mean {mean:>12}".format(
            **{k: _ms(wait[k]) for k in ("p99", "p95", "p50", "mean")}
        ),
        "service       p99 {p99:>12}  p95 {p95:>12}  p50 {p50:>12}  mean {mean:>12}".format(
            **{k: _ms(svc[k]) for k in ("p99", "p95", "p50", "mean")}
        ),
        f"SLA           p99 {_ok(sla['p99_ok'])}   p95 {_ok(sla['p95_ok'])}   "
        f"throughput {_ok(sla['throughput_ok'])} ({summary['throughput_per_s']:,.1f}/s)",
        "",
        "pipeline      compile plan: "
        + (
            f"{summary['launches_per_request']:.1f} launches/request"
            if summary.get("launches_per_request") is not None
            else "pinned service distribution"
        )
        + f"; fallback rate {summary['fallback_rate']:.1%}",
        f"              runtime queue: p99 wait {_ms(wait['p99'])}",
        f"              core placement: utilization {min(util):.0%}-{max(util):.0%}, "
        f"Jain {summary['fairness_jain']:.3f}",
        "              completion: HBM peak demand "
        + (
            f"{summary['hbm_peak_demand_ratio']:.2f}x bandwidth"
            if summary.get("hbm_peak_demand_ratio") is not None
            else "n/a"
        ),
        "",
        f"bottleneck    {cls['primary']['class']}  ({cls['primary']['metric']} = "
        f"{cls['primary']['value']}; {cls['primary']['threshold']})",
    ]
    for secondary in cls.get("secondary", []):
        lines.append(
            f"              also {secondary['class']} ({secondary['metric']} = {secondary['value']})"
        )
    lines.append(f"reproduce     {cls['primary']['command']}")
    return "\n".join(printable(line) for line in lines)  # names and commands come from packets
