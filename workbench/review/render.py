"""Rich renderings of the packet's outputs for the review steps (textual-free, tail first).

Each function takes the packet's output models (or the Mapping step's views) and returns a Rich
renderable the screens put in a Static; `compact` drops secondary columns for 80-column
terminals. Nothing here computes a figure: every number is read from the outputs or the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Group
from rich.table import Table
from rich.text import Text

from packets.schema import (
    REVIEW_QUESTION,
    Classification,
    MatrixCell,
    Mitigation,
    Release,
    RollbackTrigger,
    TailFigures,
    ValidationMatrix,
)
from triage import units
from triage.review.cells import NAMES

if TYPE_CHECKING:  # these load the model, polars and cryptography: only for type checks
    from packets.signing.packet import VerificationReport
    from triage.review.guards import Guard
    from workbench.mapping.view import BucketView, ShapeView

# Marks carry the state (they read the same without colour, under NO_COLOR); colours come only
# from the theme, through the screens' CSS classes.
GUARD_MARKS = {"pass": ("✓", ""), "warn": ("⚠", "bold"), "block": ("✗", "bold")}
SIGNATURE_MARKS = {"valid": ("✓", ""), "missing": ("·", "dim"), "stale": ("⚠", "bold")}


def _table(*columns: str, right: Sequence[str] = ()) -> Table:
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold", expand=False)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left", overflow="fold")
    return table


def _ms(value: float) -> str:
    return units.ms(value, unit=False, missing="-")  # a cell of an "... ms" column


def _share(value: float) -> str:
    return "-" if np.isnan(value) else f"{value:.0%}"


def classification_text(c: Classification | None) -> Text:
    """The senior review question, then the baseline's bottleneck class with its metric, the
    command that reproduces it and the artifact that proves it."""
    text = Text()
    text.append(REVIEW_QUESTION + "\n", style="italic")
    if c is None:
        text.append("No classification yet: propose a candidate (ctrl+r on the Proposal step).")
        return text
    p = c.primary
    text.append(f"{p.bottleneck}", style="bold")
    text.append(f"  {p.metric} = {p.value:g} ({p.threshold})\n")
    for name, value in p.evidence.items():
        text.append(f"  evidence {name}: {value:g}\n")
    for s in c.secondary:
        text.append(f"  also {s.bottleneck} ({s.metric} = {s.value:g})\n")
    t = c.tail
    text.append(
        f"baseline p99 {t.p99_ms:,.2f} ms, p95 {t.p95_ms:,.2f} ms, "
        f"{t.throughput_per_s:,.1f}/s, SLA {'met' if t.sla_ok else 'MISSED'}\n"
    )
    text.append("reproduce: ", style="bold")
    text.append(f"{c.slice.command}\n")
    text.append("artifact: ", style="bold")
    text.append(c.artifact or "none yet (the profile-trace owner's closure artifact proves it)")
    return text


def _tail_row(label: str, t: TailFigures, compact: bool) -> list[str]:
    row = [label, f"{t.p99_ms:,.2f}", f"{t.p95_ms:,.2f}"]
    if not compact:
        row.append(f"{t.p50_ms:,.2f}")
    return [*row, f"{t.throughput_per_s:,.1f}", "ok" if t.sla_ok else "MISSED"]


def mitigation_view(m: Mitigation | None, *, compact: bool = False) -> Group | Text:
    """The chosen candidate against the baseline and every rejected alternative (tail first),
    the measured reason each alternative lost, the trade-offs and the rationale."""
    if m is None:
        return Text("No proposal yet.")
    head = Text()
    head.append(f"{m.candidate}", style="bold")
    head.append(f" on {m.primary_metric}; knobs: {', '.join(m.knobs) or 'none'}")
    if m.broad_tuning_bundle:
        head.append("  ⚠ broad tuning bundle", style="bold")
    columns = ["config", "p99 ms", "p95 ms", *([] if compact else ["p50 ms"]), "per s", "SLA"]
    table = _table(*columns, right=columns[1:-1])
    table.add_row(*_tail_row("baseline", m.baseline, compact))
    table.add_row(*_tail_row(f"{m.candidate} (chosen)", m.chosen, compact), style="bold")
    for alt in m.rejected:
        table.add_row(*_tail_row(alt.candidate, alt.tail, compact))
    notes = Text()
    for alt in m.rejected:
        notes.append(f"rejected {alt.candidate}: ", style="bold")
        notes.append(f"{alt.reason}\n")
    for trade in m.trade_offs:
        notes.append("trade-off: ", style="bold")
        notes.append(f"{trade}\n")
    notes.append("rationale: ", style="bold")
    notes.append(m.rationale)
    return Group(head, table, notes)


def _missed_metrics(cell: MatrixCell) -> list[str]:
    """The metrics a cell missed, each once, in the order judged (p95, p99, throughput)."""
    return list(dict.fromkeys(NAMES[m.metric] for m in cell.missed))


def matrix_view(v: ValidationMatrix | None, *, compact: bool = False) -> Group | Text:
    """Every cell, baseline and candidate, tail first, with the SLA verdict; then the memory
    check's verdict."""
    if v is None:
        return Text("No validation matrix yet.")
    head = Text(
        f"{v.candidate}: {len(v.load_factors)} loads x {len(v.shape_mixes)} mixes x "
        f"{len(v.seeds)} seeds, {v.requests:,} requests per run"
    )
    columns = ["load", "mix", *([] if compact else ["seed"]), "config", "p99 ms", "p95 ms"]
    columns += [] if compact else ["per s", "fallback", "HBM pk"]
    table = _table(*columns, "SLA", right=("load", "seed", "p99 ms", "p95 ms", "per s", "fallback", "HBM pk"))  # fmt: skip
    for cell in v.cells:
        row = [f"x{cell.load_factor:g}", cell.shape_mix]
        row += [] if compact else [str(cell.seed)]
        row += ["base" if cell.config == "baseline" else "cand", f"{cell.p99_ms:,.1f}"]
        row.append(f"{cell.p95_ms:,.1f}")
        if not compact:
            peak = cell.hbm_peak_demand_ratio
            row += [f"{cell.throughput_per_s:,.0f}", f"{cell.fallback_rate:.3f}"]
            row.append("-" if peak is None else f"{peak:.2f}x")
        row.append("ok" if cell.sla_ok else " ".join(["MISSED", *_missed_metrics(cell)]))
        table.add_row(*row, style=None if cell.sla_ok else "bold")
    memory = Text("memory check: ", style="bold")
    memory.append(v.memory.verdict)
    return Group(head, table, memory)


def triggers_view(triggers: Sequence[RollbackTrigger], *, compact: bool = False) -> Table | Text:
    """The rollback triggers, numbered as the trigger editor counts them."""
    if not triggers:
        return Text("None yet: a finished matrix writes defaults from the SLA and its margins.")
    columns = ["#", "metric", "", "threshold", "window s", "action"]
    columns += [] if compact else ["derived from"]
    table = _table(*columns, right=("#", "threshold", "window s"))
    for number, t in enumerate(triggers, start=1):
        row = [str(number), t.metric, t.comparison, f"{t.threshold:g}", f"{t.window_s:g}", t.action]
        table.add_row(*row, *([] if compact else [t.derived_from]))
    return table


def release_view(r: Release | None) -> Text:
    """The recommendation, any override with its rationale, the rule and the reasons."""
    if r is None:
        return Text("No recommendation yet.")
    text = Text()
    text.append(f" {r.recommendation.upper()} ", style="bold reverse")
    if r.override is not None:
        o = r.override
        text.append(f"  (overridden from {r.computed} by {o.role}, {o.principal})\n")
        text.append("override rationale: ", style="bold")
        text.append(f"{o.rationale}\n")
    else:
        text.append("  (computed by the rule)\n")
    text.append("reasons:\n", style="bold")
    for reason in r.reasons:
        text.append(f"  - {reason}\n")
    text.append("rule: ", style="bold")
    text.append(r.rule)
    return text


def guards_view(guards: Sequence[Guard]) -> Text:
    """One line per review guard: pass, warn or block, and why."""
    text = Text()
    for i, g in enumerate(guards):
        mark, style = GUARD_MARKS.get(g.status, ("?", ""))
        text.append(f"{mark} {g.status:<5} ", style=style)
        text.append(f"{g.title}: ", style="bold")
        text.append(g.detail + ("\n" if i < len(guards) - 1 else ""))
    return text


def signatures_view(report: VerificationReport, dirty: bool) -> Text:
    """Each owner role's signature state over the current bytes, and packet-level problems."""
    text = Text()
    for role in report.roles:
        mark, style = SIGNATURE_MARKS.get(role.status, ("✗", "bold"))
        text.append(f"{mark} {role.status:<7} ", style=style)
        text.append(f"{role.role} ", style="bold")
        text.append(f"({role.principal}): {role.reason}\n")
    for problem in report.problems:
        text.append(f"✗ {problem}\n", style="bold")
    if dirty and any(r.status != "missing" for r in report.roles):
        text.append("unsaved edits: signatures cover the saved file, so they read as stale\n")
    text.append(
        "keys not checked against an allowed_signers file: run workbench verify "
        "--allowed-signers FILE for that",
        style="dim",
    )
    return text


def shape_view_table(view: ShapeView, *, compact: bool = False) -> Table:
    """Per runtime shape: its compiled bucket, padding and fallback as compile time predicts
    them and as the run had them, predicted against measured batch time, and the p95."""
    columns = ["shape", "share", "bucket", "pad c/r", "fallback c/r"]
    columns += [] if compact else ["padded up", "pred ms", "run ms"]
    table = _table(*columns, "p95 ms", right=(*columns[:4], "padded up", "pred ms", "run ms", "p95 ms"))  # fmt: skip
    for i, shape in enumerate(view.shapes):
        fell = bool(view.predicted_fallback[i])
        row = [
            str(shape),
            _share(view.declared_share[i]),
            "fallback" if fell else str(view.bucket_shape[i]),
            f"{_share(view.predicted_padding[i])}/{_share(view.runtime_padding[i])}",
            f"{'yes' if fell else 'no'}/{_share(view.runtime_fallback[i])}",
        ]
        if not compact:
            row += [
                _share(view.padded_up[i]),
                _ms(view.predicted_ms[i]),
                _ms(view.runtime_ms[i]),
            ]
        table.add_row(*row, _ms(view.p95_ms[i]))
    return table


def bucket_view_table(view: BucketView) -> Table:
    """Per compiled bucket (and the generic path): the shapes compile time maps to it, its
    declared traffic, and the share of requests whose batch ran in it."""
    from workbench.mapping.view import FALLBACK

    table = _table("bucket", "shapes", "declared", "ran in it", right=("declared", "ran in it"))
    for bucket, shapes, declared, ran in zip(
        view.bucket, view.shapes, view.declared_share, view.runtime_share, strict=True
    ):
        name = "fallback" if bucket == FALLBACK else str(bucket)
        table.add_row(name, ", ".join(map(str, shapes)) or "-", _share(declared), _share(ran))
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def mapping_report_view(report: dict, *, compact: bool = False) -> Group:
    """The closed-loop mapping report (`handoff-mapping-report/1`): accuracy, calibration,
    observed against simulated, the adaptation gain against its cost, and the ranked actions."""
    text = Text()
    accuracy, calibration, observed = report["accuracy"], report["calibration"], report["observed"]
    if accuracy is None:
        text.append("accuracy: no kernel telemetry\n", style="dim")
    else:
        worst = (accuracy.get("mispredicts_most") or {}).get("bucket") or {}
        text.append("compile-time accuracy: ", style="bold")
        text.append(f"MdAPE {_pct(accuracy['mdape'])}, bias {accuracy['bias']:+.1%} over "
                    f"{accuracy['rows']:,} kernels")  # fmt: skip
        text.append(f"; worst bucket {worst['label']}\n" if worst.get("label") else "\n")
    if calibration is not None:
        text.append("calibration: ", style="bold")
        text.append(f"held-out MdAPE {_pct(calibration['heldout_mdape'])} (preset "
                    f"{_pct(calibration['original_heldout_mdape'])})\n")  # fmt: skip
    if observed is not None:
        p99 = observed["p99"]
        text.append("observed p99: ", style="bold")
        text.append(f"{p99['observed_ms']:,.1f} ms, simulated {p99['simulated_ms']:,.1f} ms "
                    f"(x{p99['ratio']:.2f})\n")  # fmt: skip
    adaptation = report["adaptation"]
    before, after = adaptation["compile_only"], adaptation["runtime_adaptation"]
    cost = adaptation["cost"]
    text.append("runtime adaptation: ", style="bold")
    text.append(f"p99 {before['latency_ms']['p99']:,.1f} -> {after['latency_ms']['p99']:,.1f} ms, "
                f"fallback {before['fallback_rate']:.1%} -> {after['fallback_rate']:.1%}, for "
                f"{cost['compile_ms'] / 1000:,.1f} s of compile and "
                f"{cost['memory_bytes'] / 2**20:,.0f} MiB")  # fmt: skip
    for note in report["notes"]:
        text.append(f"\nnote: {note}", style="dim")
    columns = ["#", "action", "p99 gain ms", "compile s"]
    columns += [] if compact else ["ms per s", "applies as"]
    table = _table(*columns, "", right=("#", "p99 gain ms", "compile s", "ms per s"))
    for action in report["actions"]:
        row = [str(action["rank"]), action["id"], f"{action['gain']['p99_ms']:,.1f}",
               f"{action['cost']['compile_ms'] / 1000:,.1f}"]  # fmt: skip
        if not compact:
            per = action["gain_per_cost"]
            row += ["-" if per is None else f"{per:,.1f}", action["applies_as"].replace("_", " ")]
        table.add_row(*row, "recommended" if action["recommended"] else "")
    return Group(text, table)
