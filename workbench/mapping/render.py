"""Rich renderings of the Mapping step (textual-free): its per-shape and per-bucket tables and the
closed-loop mapping report. Every number is read from the views (workbench/mapping/view.py) or
the report (`triage.mapping.report`); nothing here computes a figure. `compact` drops secondary
columns for 80-column terminals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from workbench.review.render import ms_cell, plain_table, share_cell

if TYPE_CHECKING:  # the view module loads polars and the model: only for type checks
    from workbench.mapping.view import BucketView, ShapeView


def shape_view_table(view: ShapeView, *, compact: bool = False) -> Table:
    """Per runtime shape: its compiled bucket, padding and fallback as compile time predicts
    them and as the run had them, predicted against measured batch time, and the p95."""
    columns = ["shape", "share", "bucket", "pad c/r", "fallback c/r"]
    columns += [] if compact else ["padded up", "pred ms", "run ms"]
    table = plain_table(*columns, "p95 ms", right=(*columns[:4], "padded up", "pred ms", "run ms", "p95 ms"))  # fmt: skip
    for i, shape in enumerate(view.shapes):
        fell = bool(view.predicted_fallback[i])
        row = [
            str(shape),
            share_cell(view.declared_share[i]),
            "fallback" if fell else str(view.bucket_shape[i]),
            f"{share_cell(view.predicted_padding[i])}/{share_cell(view.runtime_padding[i])}",
            f"{'yes' if fell else 'no'}/{share_cell(view.runtime_fallback[i])}",
        ]
        if not compact:
            row += [
                share_cell(view.padded_up[i]),
                ms_cell(view.predicted_ms[i]),
                ms_cell(view.runtime_ms[i]),
            ]
        table.add_row(*row, ms_cell(view.p95_ms[i]))
    return table


def bucket_view_table(view: BucketView) -> Table:
    """Per compiled bucket (and the generic path): the shapes compile time maps to it, its
    declared traffic, and the share of requests whose batch ran in it."""
    from workbench.mapping.view import FALLBACK

    table = plain_table(
        "bucket", "shapes", "declared", "ran in it", right=("declared", "ran in it")
    )
    for bucket, shapes, declared, ran in zip(
        view.bucket, view.shapes, view.declared_share, view.runtime_share, strict=True
    ):
        name = "fallback" if bucket == FALLBACK else str(bucket)
        table.add_row(
            name, ", ".join(map(str, shapes)) or "-", share_cell(declared), share_cell(ran)
        )
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
    table = plain_table(*columns, "", right=("#", "p99 gain ms", "compile s", "ms per s"))
    for action in report["actions"]:
        row = [str(action["rank"]), action["id"], f"{action['gain']['p99_ms']:,.1f}",
               f"{action['cost']['compile_ms'] / 1000:,.1f}"]  # fmt: skip
        if not compact:
            per = action["gain_per_cost"]
            row += ["-" if per is None else f"{per:,.1f}", action["applies_as"].replace("_", " ")]
        table.add_row(*row, "recommended" if action["recommended"] else "")
    return Group(text, table)
