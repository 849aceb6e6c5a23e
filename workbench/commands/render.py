"""Plain-text renderings of model results for the command line (tail first, never averages
alone). The app draws the same facts with widgets; these are for terminals and logs."""

from __future__ import annotations

from typing import Any

from packets.safe_text import printable
from triage import units

_ms = units.ms  # '12.34 ms', 'n/a'


def _ok(flag: bool | None) -> str:
    return "n/a" if flag is None else ("ok" if flag else "MISSED")


def serving_text(summary: dict[str, Any]) -> str:
    """A serving run: TTFT, TPOT and latency tails, SLA, tokens/s, preemptions, KV, tail parts."""
    sla = summary["sla"]
    lines = [
        f"{summary['packet']} / {summary['candidate']}  seed {summary['seed']}  "
        f"{summary['measured_requests']:,} of {summary['requests']:,} requests measured  "
        "(continuous batching)",
        "",
    ]
    for label, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"), ("latency", "latency_ms")):
        v = summary[key]
        lines.append(
            f"{label:<13} p99 {_ms(v['p99']):>12}  p95 {_ms(v['p95']):>12}  "
            f"p50 {_ms(v['p50']):>12}  max {_ms(v['max']):>12}"
        )
    kv = summary["kv_cache"]
    capacity = kv["capacity_tokens_per_engine"]
    lines += [
        f"SLA           p99 {_ok(sla['p99_ok'])}   p95 {_ok(sla['p95_ok'])}   "
        f"TTFT p95 {_ok(sla['ttft_p95_ok'])}   TPOT p95 {_ok(sla['tpot_p95_ok'])}",
        "",
        f"throughput    {summary['tokens_per_s']:,.0f} tokens/s "
        f"({summary['throughput_per_s']:,.2f} requests/s); {summary['iterations']:,} iterations",
        f"KV cache      peak {kv['peak_tokens']:,} of "
        + (f"{capacity:,}" if capacity else "unlimited")
        + f" tokens per engine; {summary['preemptions']:,} preemptions",
        "",
        "slowest 1%    "
        + ", ".join(
            f"{k} {_ms(v)}"
            for k, v in summary["tail_attribution_ms"]["slowest_1pct"].items()
            if k not in ("requests", "latency_ms")
        ),
    ]
    lines += serving_diagnosis_lines(summary)
    lines.append(f"reproduce     {summary['command']}")
    return "\n".join(printable(line) for line in lines)  # names and commands come from packets


SERVING_METRICS = (("latency", "latency"), ("ttft", "TTFT"), ("tpot", "TPOT"))


def serving_diagnosis_lines(summary: dict[str, Any]) -> list[str]:
    """The Shapley p99 drop of each active serving driver (latency, TTFT, TPOT) and the
    bottleneck class; nothing for a summary without attribution."""
    counterfactual = summary["tail_attribution_ms"].get("counterfactual")
    cls = summary.get("classification")
    if counterfactual is None or cls is None:
        return []
    drivers = counterfactual["drivers"]
    lines = [
        "",
        f"tail drivers  p99 drop if switched off (Shapley over {len(drivers)} drivers, "
        f"{counterfactual['runs']} re-runs)",
    ]
    for key, label in SERVING_METRICS:
        block = counterfactual[key]
        if block is None:
            continue
        drops = ", ".join(f"{d} {_ms(block['p99_drop_if_off_ms'][d])}" for d in drivers)
        lines.append(
            f"  {label:<11} p99 {_ms(block['p99_ms'])}, all off {_ms(block['p99_all_off_ms'])}: "
            f"{drops or 'no driver can act'}"
        )
    primary = cls["primary"]
    lines.append(
        f"bottleneck    {primary['class']}  ({primary['metric']} = {primary['value']}; "
        f"{primary['threshold']})"
    )
    for secondary in cls["secondary"]:
        lines.append(
            f"              also {secondary['class']} ({secondary['metric']} = {secondary['value']})"
        )
    return lines


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
