"""`workbench validate PACKET [--quick]`: the validation matrix and default rollback triggers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet

from .run import check_request_cap, positive_int


def _factors(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected numbers like 0.5,1,1.25, got {text!r}"
        ) from None
    if not values or any(not (0 < v <= 10) for v in values):
        raise argparse.ArgumentTypeError("load factors must be in (0, 10]")
    return values


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="run the validation matrix for the proposed candidate",
        description="Load levels x shape mixes (production and long-tail) x seeds, baseline and "
        "candidate in each cell: p95, p99, throughput, fallback rate, HBM peak demand, SLA. "
        "Writes the matrix, the memory check and default rollback triggers.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument(
        "--quick", action="store_true", help="2 loads x 2 mixes x 1 seed, 4,000 requests"
    )
    p.add_argument(
        "--loads", type=_factors, metavar="F,F,...", help="load factors of the packet rate"
    )
    p.add_argument("--seeds", type=positive_int, help="seeds per cell (default 3)")
    p.add_argument("--requests", type=positive_int, help="requests per run")
    p.add_argument("--keep-triggers", action="store_true", help="keep edited rollback triggers")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from triage.review.matrix import MatrixSpec, run_matrix
    from triage.review.triggers import default_triggers
    from triage.review.writing import with_outputs, write_packet

    check_request_cap(args.requests)
    loaded = load_packet(args.packet)
    mitigation = loaded.packet.outputs.mitigation
    if mitigation is None:
        raise UsageError(f"{args.packet}: no proposal yet: run workbench propose first")
    spec = MatrixSpec.quick() if args.quick else MatrixSpec()
    spec = MatrixSpec(
        load_factors=args.loads or spec.load_factors,
        seeds=args.seeds or spec.seeds,
        requests=args.requests or spec.requests,
    )

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            print(f"\rvalidating: {done}/{total} cells", end="", file=sys.stderr, flush=True)

    matrix = run_matrix(loaded, mitigation.candidate, spec, progress=progress)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    triggers = loaded.packet.outputs.rollback_triggers
    if not (args.keep_triggers and triggers):
        triggers = default_triggers(loaded.packet, matrix)
    packet = with_outputs(loaded.packet, validation_matrix=matrix, rollback_triggers=triggers)
    write_packet(loaded, packet, doing="validating")
    cand = [c for c in matrix.cells if c.config == matrix.candidate]
    missed = sum(not c.sla_ok for c in cand)
    print(f"{len(matrix.cells)} cells; candidate {matrix.candidate} meets the SLA in "
          f"{len(cand) - missed} of {len(cand)}; memory: {matrix.memory.verdict}")  # fmt: skip
    print(f"{len(triggers)} rollback trigger(s); wrote {args.packet}")
    return 0
