"""`workbench propose PACKET --candidate NAME --rationale TEXT`: classify and propose."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet
from packets.schema import PRIMARY_METRICS, REVIEW_QUESTION


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "propose",
        help="classify the baseline's bottleneck and propose a candidate",
        description="Run the baseline and every candidate on the packet's workload slice, "
        "record the baseline's bottleneck classification and the mitigation proposal "
        "(rationale, trade-offs, every rejected alternative with the measured reason).",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--candidate", required=True, metavar="NAME")
    p.add_argument("--rationale", required=True, metavar="TEXT")
    p.add_argument("--trade-off", dest="trade_offs", action="append", default=[], metavar="TEXT")
    p.add_argument(
        "--metric", choices=PRIMARY_METRICS, default=None,
        help="primary metric (default: tpot_p95_ms for a serving packet with a TPOT target, "
        "else p99_ms)",
    )  # fmt: skip
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from triage.review.proposal import classify, propose, ranking
    from triage.review.writing import with_outputs, write_packet

    loaded = load_packet(args.packet)
    path = str(args.packet)
    try:
        mitigation = propose(
            loaded, path, args.candidate, args.rationale, args.trade_offs, args.metric
        )
    except (KeyError, ValueError) as exc:
        raise UsageError(str(exc.args[0] if isinstance(exc, KeyError) else exc)) from None
    classification = classify(loaded, path)
    packet = with_outputs(loaded.packet, classification=classification, mitigation=mitigation)
    write_packet(loaded, packet, doing="proposing")
    c, m = classification, mitigation
    print(f"{REVIEW_QUESTION}")
    print(f"  baseline bottleneck: {c.primary.bottleneck} ({c.primary.metric} {c.primary.value}); "
          f"reproduce: {c.slice.command}")  # fmt: skip
    print(f"proposed {m.candidate}: {m.primary_metric} {getattr(m.chosen, m.primary_metric):,.2f} "
          f"vs baseline {getattr(m.baseline, m.primary_metric):,.2f}; knobs: {', '.join(m.knobs)}"
          + (" (broad tuning bundle)" if m.broad_tuning_bundle else ""))  # fmt: skip
    for alt in m.rejected:
        print(f"  rejected {alt.candidate}: {alt.reason}")
    ranked = ", ".join(f"{name} {value:,.2f}" for name, value in ranking(m))
    print(f"ranked by {m.primary_metric}: {ranked}")
    print(f"wrote {args.packet}")
    return 0
