"""The closed-loop mapping report and a calibration as markdown (`--markdown`, and the default
text of `workbench report` / `telemetry calibrate`). Tail first: p99 before p95."""

from __future__ import annotations

from typing import Any

from triage import units


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _signed_pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:+.1f}%"


def _ms(value: float | None) -> str:
    return units.ms(value, digits=1, unit=False, missing="-")  # a cell of an "... ms" column


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _mib(value: float) -> str:
    return f"{value / 2**20:+,.0f}"


def _bounds(cal: dict, name: str) -> str:
    bound = cal.get("bounds", {}).get(name)
    return "-" if bound is None else f"{bound['lower']:g}..{bound['upper']:g}"


def calibration_markdown(cal: dict, written: str | None = None) -> str:
    """A calibration (`Calibration.as_dict()`) as markdown; `written`: the file it went to."""
    lines = [
        f"Calibration of {cal['hardware']}: fit on {cal['rows_train']} rows, scored on "
        f"{cal['rows_heldout']} held-out rows ({cal['implausible_rows']} implausible rows "
        "excluded)",
        "",
        "| field | before | fitted | bounds |",
        "|---|---:|---:|---|",
        *[
            f"| {f} | {cal['original'][f]:g} | {cal['fitted'][f]:g} | {_bounds(cal, f)} |"
            for f in cal["fields"]
        ],
        *[
            f"- suspect: {s['field']} = {s['value']:g} sits on its {s['bound']} bound "
            f"{s['limit']:g} ({s['why']}): a mechanism the model lacks is being absorbed"
            for s in cal.get("suspect", [])
        ],
        *(
            [
                f"- {cal['choice']['field']}: {cal['choice']['chosen']} (training loss "
                + ", ".join(f"{k} {v:.4g}" for k, v in cal["choice"]["loss"].items())
                + ")"
            ]
            if cal.get("choice")
            else []
        ),
        "",
        "| MdAPE | train | held-out |",
        "|---|---:|---:|",
        f"| before | {_pct(cal['original_train_mdape'])} | {_pct(cal['original_heldout_mdape'])} |",
        f"| fitted | {_pct(cal['train_mdape'])} | {_pct(cal['heldout_mdape'])} |",
    ]
    for op, m in cal["by_op"].items():
        lines.append(
            f"| held-out {op} ({m['rows_heldout']} rows) | | "
            f"{_pct(m['original_heldout_mdape'])} -> {_pct(m['heldout_mdape'])} |"
        )
    if cal.get("heldout_ratio"):
        r = cal["heldout_ratio"]
        lines += [
            "",
            f"Held-out measured/predicted: p10 {r['p10']:.2f}, p50 {r['p50']:.2f}, p90 "
            f"{r['p90']:.2f}; {_pct(cal['band_coverage_heldout'])} of held-out rows inside the "
            "10-90% bands of the training residuals.",
        ]
    lines += ["", f"Loss: {cal['loss']}. Split: {cal['split']}."]
    if written:
        lines += ["", f"Wrote {written}: reference it from a packet with inputs.hardware.file."]
    return "\n".join(lines) + "\n"


def _accuracy(acc: dict | None) -> list[str]:
    lines = ["## 1. Compile-time mapping accuracy", ""]
    if acc is None:
        return [*lines, "No kernel telemetry given: nothing to score the compile plan on.", ""]
    lines += [
        f"{acc['rows']} kernel rows scored on {acc['hardware']} (MdAPE {_pct(acc['mdape'])}, "
        f"bias {_signed_pct(acc['bias'])}: positive = slower than predicted); "
        f"{acc['implausible_rows']} implausible and {acc['unsupported_rows']} unpredictable "
        "rows excluded.",
        "",
        "| bucket | rows | MdAPE | bias | p90 APE |",
        "|---|---:|---:|---:|---:|",
        *[
            f"| {b['label']} | {b['rows']} | {_pct(b['mdape'])} | {_signed_pct(b['bias'])} | "
            f"{_pct(b['p90_ape'])} |"
            for b in acc["by_bucket"]
        ],
        "",
    ]
    most = acc.get("mispredicts_most", {})
    if most:
        parts = []
        if "bucket" in most:
            parts.append(f"bucket {most['bucket']['label']} ({_pct(most['bucket']['mdape'])})")
        if "op_bucket" in most:
            ob = most["op_bucket"]
            parts.append(f"{ob['op']} in {ob['label']} ({_pct(ob['mdape'])})")
        if "tile" in most:
            t = most["tile"]
            parts.append(f"{t['op']} tile {t['tile']} ({_pct(t['mdape'])}, {t['rows']} rows)")
        lines += ["Mispredicts most: " + "; ".join(parts) + ".", ""]
    if acc["worst"]:
        lines += ["| worst row | op | tokens | bucket | tile | measured us | predicted us | APE |",
                  "|---|---|---:|---|---|---:|---:|---:|"]  # fmt: skip
        for w in acc["worst"][:5]:
            lines.append(
                f"| {w.get('where', w['row'])} | {w['op']} | {w['tokens']} | {w['bucket']} | "
                f"{w['tile'] or '-'} | {w['measured_us']:.2f} | {w['predicted_us']:.2f} | "
                f"{_pct(w['ape'])} |"
            )
        lines.append("")
    return lines


def _observed(obs: dict | None) -> list[str]:
    lines = ["## 3. Observed requests vs the simulated compile plan", ""]
    if obs is None:
        return [*lines, "No request telemetry given: the packet's shape mix and arrivals are "
                "simulated from its seed.", ""]  # fmt: skip
    lines += [
        f"{obs['requests']} requests replayed (after the warm-up).",
        "",
        "| | observed ms | simulated ms | simulated/observed |",
        "|---|---:|---:|---:|",
    ]
    for p in ("p99", "p95", "p50"):
        o = obs[p]
        lines.append(f"| {p} | {_ms(o['observed_ms'])} | {_ms(o['simulated_ms'])} | "
                     f"{_rate(o['ratio'])} |")  # fmt: skip
    lines += [
        "",
        "| bucket | requests | observed p99 ms | simulated p99 ms |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {b['label']} | {b['requests']} | {_ms(b['observed_p99_ms'])} | "
        f"{_ms(b['simulated_p99_ms'])} |"
        for b in obs["by_bucket"]
    ]
    return [*lines, ""]


def _adaptation(ad: dict) -> list[str]:
    before, after, won, cost = ad["compile_only"], ad["runtime_adaptation"], ad["gain"], ad["cost"]
    rows = [
        ("p99 latency ms", before["latency_ms"]["p99"], after["latency_ms"]["p99"],
         won["p99_ms"], won["p99_fraction"]),
        ("p95 latency ms", before["latency_ms"]["p95"], after["latency_ms"]["p95"],
         won["p95_ms"], won["p95_fraction"]),
        ("throughput /s", before["throughput_per_s"], after["throughput_per_s"],
         won["throughput_per_s"], won["throughput_fraction"]),
        ("capacity /s", before["capacity_per_s"], after["capacity_per_s"],
         won["capacity_per_s"], won["capacity_fraction"]),
    ]  # fmt: skip
    lines = [
        "## 4. Runtime adaptation gain",
        "",
        f"Compile-only `{before['config']}` (buckets {before['compiled_shapes']}) vs runtime "
        f"adaptation `{after['config']}` (buckets {after['compiled_shapes']}).",
        "",
        "| | compile-only | runtime adaptation | gain | gain % |",
        "|---|---:|---:|---:|---:|",
        *[f"| {n} | {_ms(a)} | {_ms(b)} | {_ms(g)} | {_signed_pct(f)} |" for n, a, b, g, f in rows],
        f"| fallback rate | {_pct(before['fallback_rate'])} | {_pct(after['fallback_rate'])} | | |",
        f"| padding | {_pct(before['padding_fraction'])} | {_pct(after['padding_fraction'])} | | |",
        "",
        f"Retuning cost: {len(cost['added_buckets'])} buckets added {cost['added_buckets']}, "
        f"{cost['kernels']} kernels, {cost['compile_ms'] / 1000:,.1f} s of compile, "
        f"{_mib(cost['memory_bytes'])} MiB of kernel binaries and workspace.",
        "",
    ]
    return lines


def _evidence(action: dict) -> str:
    ev = action["evidence"]
    parts = []
    if ev.get("requests"):
        r = ev["requests"]
        parts.append(f"{r['requests']} requests ({_pct(r['share'])}), observed p99 "
                     f"{_ms(r['observed_p99_ms'])} ms, e.g. {', '.join(r['first'])}")  # fmt: skip
    if ev.get("kernels"):
        k = ev["kernels"]
        worst = ", ".join(w["where"] for w in k["worst"])
        parts.append(f"{k['rows']} kernel rows, MdAPE {_pct(k['mdape'])}, bias "
                     f"{_signed_pct(k['bias'])}, worst {worst}")  # fmt: skip
    for m in ev.get("model", [])[:3]:
        parts.append(
            f"{m['seq_len']} tokens ({_pct(m['share'])}, now {m['runs_now_in']}): "
            f"{_ms(m['service_ms_per_request_now'])} -> "
            f"{_ms(m['service_ms_per_request_after'])} ms per request at full batch"
        )
    return "; ".join(parts) or "model only"


def _actions(actions: list[dict]) -> list[str]:
    lines = ["## 5. Retuning actions, ranked by p99 gain per compile second", ""]
    if not actions:
        return [*lines, "None: every observed shape is compiled and no tile is pinned.", ""]
    lines += [
        "| rank | action | p99 gain ms | p95 gain ms | capacity gain /s | compile s | "
        "memory MiB | p99 ms per compile s | recommended |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for a in actions:
        g, c = a["gain"], a["cost"]
        lines.append(
            f"| {a['rank']} | {a['id']} | {_ms(g['p99_ms'])} | {_ms(g['p95_ms'])} | "
            f"{_rate(g.get('capacity_per_s'))} | {c['compile_ms'] / 1000:,.1f} | "
            f"{_mib(c['memory_bytes'])} | {_rate(a['gain_per_cost'])} | "
            f"{'yes' if a['recommended'] else 'no'} |"
        )
    lines.append("")
    for a in actions:
        lines.append(f"{a['rank']}. **{a['id']}**: {a['description']} Evidence: {_evidence(a)}.")
    return [*lines, ""]


def report_markdown(report: dict[str, Any]) -> str:
    """The closed-loop mapping report (`handoff-mapping-report/1` dict) as markdown."""
    mix = report["shape_mix"]
    head = [
        f"# Closed-loop mapping report: {report['packet']} / {report['candidate']} on "
        f"{report['hardware']['name']}",
        "",
        f"Shape mix from {mix['source']}: {len(mix['values'])} seq_len values"
        + (f" (rounded up to {mix['rounded_to_tokens']} tokens)" if mix["rounded_to_tokens"] > 1
           else "")
        + f"; total variation from the packet's declared mix {mix['total_variation']:.3f}.",
        "",
    ]  # fmt: skip
    cal = report["calibration"]
    calibration = ["## 2. Calibration", ""]
    if cal is None:
        calibration += ["No calibration (no or too few kernel rows).", ""]
    else:
        calibration += [calibration_markdown(cal)]
    lines = [
        *head,
        *_accuracy(report["accuracy"]),
        *calibration,
        *_observed(report["observed"]),
        *_adaptation(report["adaptation"]),
        *_actions(report["actions"]),
    ]
    if report["notes"]:
        lines += ["Notes:", *[f"- {n}" for n in report["notes"]], ""]
    if report.get("command"):
        lines.append(f"Reproduce: `{report['command']}`")
    return "\n".join(lines).rstrip() + "\n"
