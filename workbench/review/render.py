"""Rich renderings of the packet's outputs for the review steps (textual-free, tail first).

Each function takes the packet's output models and returns a Rich renderable the screens put in
a Static; `compact` drops secondary columns for 80-column terminals. Nothing here computes a
figure: every number is read from the outputs. The cell helpers (`plain_table`, `ms_cell`,
`share_cell`) are shared with the Mapping step's tables (workbench/mapping/render.py).
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

# Marks carry the state (they read the same without colour, under NO_COLOR); colours come only
# from the theme, through the screens' CSS classes.
GUARD_MARKS = {"pass": ("✓", ""), "warn": ("⚠", "bold"), "block": ("✗", "bold")}
SIGNATURE_MARKS = {"valid": ("✓", ""), "missing": ("·", "dim"), "stale": ("⚠", "bold")}


def plain_table(*columns: str, right: Sequence[str] = ()) -> Table:
    """A borderless table with bold headers; the columns named in `right` right-aligned."""
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold", expand=False)
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left", overflow="fold")
    return table


def ms_cell(value: float) -> str:
    """A cell of an "... ms" column (no unit; "-" when missing)."""
    return units.ms(value, unit=False, missing="-")  # a cell of an "... ms" column


def share_cell(value: float) -> str:
    """A share as a whole percentage ("-" for NaN)."""
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
    table = plain_table(*columns, right=columns[1:-1])
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
    table = plain_table(*columns, "SLA", right=("load", "seed", "p99 ms", "p95 ms", "per s", "fallback", "HBM pk"))  # fmt: skip
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
    table = plain_table(*columns, right=("#", "threshold", "window s"))
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
