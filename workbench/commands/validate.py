"""`workbench validate PACKET... [--quick] [--scheduler ADDR]`: the validation matrix and default
rollback triggers, one summary line per packet."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from packets.errors import PacketError, UsageError
from packets.load import load_packet
from workbench.core.cluster import Engine, add_scheduler_option, engine

from .run import check_request_cap, positive_int
from .sweep import add_quiet_option


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
    p.add_argument("packets", type=Path, nargs="+", metavar="PACKET")
    p.add_argument(
        "--quick", action="store_true", help="2 loads x 2 mixes x 1 seed, 4,000 requests"
    )
    p.add_argument(
        "--loads", type=_factors, metavar="F,F,...", help="load factors of the packet rate"
    )
    p.add_argument("--seeds", type=positive_int, help="seeds per cell (default 3)")
    p.add_argument("--requests", type=positive_int, help="requests per run")
    p.add_argument("--keep-triggers", action="store_true", help="keep edited rollback triggers")
    add_scheduler_option(p)
    add_quiet_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Validate each packet in turn on one engine; a packet that cannot be validated is
    reported (one line, as the CLI reports errors) and the others still run. Exit status: the
    worst of the packets' (0 ok, 1 invalid packet, 2 usage)."""
    check_request_cap(args.requests)
    status = 0
    with engine(args.scheduler) as where:
        for path in args.packets:
            try:
                print(validate_one(path, args, where), flush=True)
            except PacketError as exc:
                for problem in exc.problems:
                    print(problem, file=sys.stderr)
                status = max(status, 1)
            except UsageError as exc:
                if len(args.packets) == 1:
                    raise
                print(f"workbench: {exc}", file=sys.stderr)
                status = max(status, 2)
    return status


def validate_one(path: Path, args: argparse.Namespace, where: Engine) -> str:
    """Run the matrix for one packet, write it with its triggers; the summary line."""
    from triage.review.matrix import MatrixSpec, run_matrix
    from triage.review.triggers import default_triggers
    from triage.review.writing import with_outputs, write_packet
    from workbench.core.progress import progress_bar

    loaded = load_packet(path)
    mitigation = loaded.packet.outputs.mitigation
    if mitigation is None:
        raise UsageError(f"{path}: no proposal yet: run workbench propose first")
    spec = MatrixSpec.quick() if args.quick else MatrixSpec()
    spec = MatrixSpec(
        load_factors=args.loads or spec.load_factors,
        seeds=args.seeds or spec.seeds,
        requests=args.requests or spec.requests,
    )
    with progress_bar(f"validating {path.name}", args.quiet) as progress:
        matrix = run_matrix(
            loaded, mitigation.candidate, spec, progress=progress,
            executor=where.executor, parallelism=where.parallelism,
        )  # fmt: skip
    triggers = loaded.packet.outputs.rollback_triggers
    if not (args.keep_triggers and triggers):
        triggers = default_triggers(loaded.packet, matrix)
    packet = with_outputs(loaded.packet, validation_matrix=matrix, rollback_triggers=triggers)
    write_packet(loaded, packet, doing="validating")
    cand = [c for c in matrix.cells if c.config == matrix.candidate]
    missed = sum(not c.sla_ok for c in cand)
    return (
        f"{path}: {len(matrix.cells)} cells; candidate {matrix.candidate} meets the SLA in "
        f"{len(cand) - missed} of {len(cand)}{_serving_figures(cand)}; memory: "
        f"{matrix.memory.verdict}; {len(triggers)} rollback trigger(s); written"
    )


def _serving_figures(cells) -> str:
    """A serving matrix's candidate at production load on its first mix: TTFT and TPOT p95,
    median over seeds ('' for the dynamic batcher's cells)."""
    from statistics import median

    first = [c for c in cells if c.load_factor == 1.0 and c.ttft_p95_ms is not None]
    first = [c for c in first if c.shape_mix == first[0].shape_mix] if first else []
    if not first:
        return ""
    ttft = median(c.ttft_p95_ms for c in first)
    tpot = median(c.tpot_p95_ms for c in first)
    return f" (x1 {first[0].shape_mix}: TTFT p95 {ttft:,.1f} ms, TPOT p95 {tpot:,.2f} ms)"
