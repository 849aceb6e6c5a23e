"""`workbench worksheet PACKET`: the fusion & tile-plan worksheet of a configuration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet

from .run import positive_int


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "worksheet",
        help="fusion & tile-plan worksheet",
        description="Per kernel: operator group, tile shape, launches, FLOPs, HBM bytes, reuse "
        "ratio, SRAM footprint vs capacity, predicted time, bound, and the bottleneck shift "
        "against the baseline; totals per block. On a serving packet (without --shape or "
        "--batch): per phase (prefill chunk, decode step) at the point its serving run gives, "
        "with one mixed iteration priced as the continuous scheduler prices it.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--candidate", metavar="NAME", help="default: the baseline")
    p.add_argument("--shape", metavar="seq_len=N", help="default: the mix's most common seq_len")
    p.add_argument("--batch", type=positive_int, help="default: the configuration's max_batch")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="stable JSON (handoff-worksheet/1)")
    out.add_argument("--markdown", action="store_true")
    p.set_defaults(run=run)


def _seq_len(text: str | None, mix) -> int:
    if text is None:
        return mix.values[max(range(len(mix.values)), key=lambda i: mix.weights[i])]
    name, _, value = text.partition("=")
    if name.strip() != "seq_len" or not value.strip().isdigit() or int(value) < 1:
        raise UsageError(f"--shape {text!r}: expected seq_len=N with N >= 1")
    return int(value)


def run(args: argparse.Namespace) -> int:
    from model.compiler.worksheet import worksheet_markdown
    from triage.scenario import build_scenario

    loaded = load_packet(args.packet)
    try:
        scenario = build_scenario(loaded, args.candidate)
        base = build_scenario(loaded)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    serving = loaded.packet.inputs.workload.block.phase == "serving"
    if serving and args.shape is None and args.batch is None:
        return _serving(args, loaded, scenario, base)
    seq_len = _seq_len(args.shape, loaded.packet.inputs.workload.shapes.seq_len)
    batch = args.batch or scenario.config.batch_policy.max_batch
    sheet = scenario.worksheet(base, batch, seq_len)
    sheet = {"packet": loaded.packet.id, "candidate": scenario.candidate, **sheet}
    if args.json:
        print(json.dumps(sheet, indent=2, allow_nan=False))
    else:
        print(worksheet_markdown(sheet))
    return 0


def _serving(args: argparse.Namespace, loaded, scenario, base) -> int:  # type: ignore[no-untyped-def]
    """The serving worksheet (triage/serving_sheet.py) at the configuration's serving run."""
    from triage.runs import run_serving_scenario
    from triage.scenario import build_scenario
    from triage.serving_sheet import (
        baseline_plan_table,
        serving_worksheet,
        serving_worksheet_json,
        serving_worksheet_markdown,
    )

    report = run_serving_scenario(scenario, str(args.packet))
    base_table = baseline_plan_table(
        scenario, base, lambda hybrid: build_scenario(loaded, args.candidate, config=hybrid)
    )
    sheet = serving_worksheet(report.summary, scenario, base, scenario.iteration_table, base_table)
    sheet = {"packet": loaded.packet.id, "candidate": scenario.candidate, **sheet}
    if args.json:
        print(json.dumps(serving_worksheet_json(sheet), indent=2, allow_nan=False))
    else:
        print(serving_worksheet_markdown(sheet))
    return 0
