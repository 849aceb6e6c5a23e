"""`workbench search PACKET --trials N --seed S --save-as NAME`: a guided search (Optuna, seeded)
over fusion, tiles, batch policy, placement and compiled shapes; saves the best configuration
that meets the SLA as a candidate, with its provenance and the alternatives it beat."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import polars as pl

from packets.errors import UsageError
from packets.load import load_packet
from workbench.core.cluster import add_scheduler_option, engine

from .run import positive_int
from .sweep import _table, add_quiet_option, write_parquet

DEFAULT_TRIALS = 64
FRONT_COLUMNS = ("trial", "latency_p99_ms", "latency_p95_ms", "throughput_per_s", "sla")
SERVING_FRONT_COLUMNS = ("trial", "tpot_p95_ms", "ttft_p95_ms", "latency_p99_ms", "tokens_per_s",
                         "sla")  # fmt: skip
OBJECTIVE_CHOICES = ("p99", "p95", "throughput", "ttft_p95", "tpot_p95", "tokens")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help="guided search for a candidate (Optuna, seeded)",
        description="Search fusion, tiles per op, batch policy, placement and compiled shapes "
        "with Optuna's TPE sampler (deterministic for a seed, locally or on a cluster). "
        "Configurations the model refuses are pruned; the SLA is a constraint. Saves the best "
        "as candidate NAME with its provenance and the top rejected alternatives, and prints "
        "the Pareto front (p99 against throughput). A serving packet searches the continuous "
        "scheduler's knobs (max_num_seqs, max_num_batched_tokens, chunked_prefill) with TTFT "
        "and TPOT targets as constraints; its front is TPOT p95 against TTFT p95.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument(
        "--trials", type=positive_int, default=DEFAULT_TRIALS, help="trials (default 64)"
    )
    p.add_argument("--seed", type=int, help="sampler seed (default: the packet's seed)")
    p.add_argument(
        "--objective", choices=OBJECTIVE_CHOICES, default=None,
        help="what the best candidate is best at (default p99; a serving packet with a TPOT "
        "target: tpot_p95; ttft_p95, tpot_p95 and tokens need a serving packet)",
    )  # fmt: skip
    p.add_argument(
        "--requests", type=positive_int, help="requests per trial (default: the packet's)"
    )
    p.add_argument("--save-as", required=True, metavar="NAME", help="candidate name to save")
    p.add_argument("--parquet", type=Path, metavar="OUT", help="write every trial to Parquet")
    add_scheduler_option(p)
    add_quiet_option(p)
    p.set_defaults(run=run)


def command_line(args: argparse.Namespace, seed: int) -> str:
    """The command that reproduces the search (the scheduler does not change the result)."""
    parts = ["workbench", "search", str(args.packet), "--trials", str(args.trials),
             "--seed", str(seed), "--objective", args.objective]  # fmt: skip
    if args.requests:
        parts += ["--requests", str(args.requests)]
    return shlex.join([*parts, "--save-as", args.save_as])


def trials_frame(result) -> pl.DataFrame:
    """One row per trial: number, drawn parameters, the model's refusal, headline figures."""
    rows = [
        {"trial": t.number, **{k: str(v) for k, v in t.params}, "refused": t.refused,
         **(t.row or {}), "sla_ok": t.feasible}
        for t in result.trials
    ]  # fmt: skip
    return pl.DataFrame(rows, infer_schema_length=None)


def run(args: argparse.Namespace) -> int:
    from packets.schema import Packet, SearchProvenance
    from triage.review.writing import write_packet
    from triage.search import alternatives, default_objective, knob_texts, run_search
    from workbench.core.progress import progress_bar
    from workbench.lab.config import ConfigRefused, candidate_entry

    loaded = load_packet(args.packet)
    packet = loaded.packet
    if args.objective is None:
        args.objective = default_objective(packet)
    seed = packet.seed if args.seed is None else args.seed
    if seed < 0:
        raise UsageError(f"--seed {seed}: must be >= 0")
    existing = {c.name: c for c in packet.candidates}
    if args.save_as in existing and existing[args.save_as].provenance is None:
        raise UsageError(
            f"--save-as {args.save_as}: {args.packet} already has a hand-made candidate of "
            "that name (a searched one would be replaced)"
        )
    with engine(args.scheduler) as where, progress_bar("search", args.quiet) as progress:
        try:
            result = run_search(
                loaded, args.trials, seed, args.objective, where.executor,
                parallelism=where.parallelism, requests=args.requests, progress=progress,
            )  # fmt: skip
        except ValueError as exc:  # a serving objective on a packet without serving
            raise UsageError(f"--objective {args.objective}: {exc}") from None
    if args.parquet is not None:
        write_parquet(trials_frame(result), args.parquet)
    base = packet.baseline
    print(_front(result, base))
    if result.best is None:
        print(f"workbench: none of {args.trials} trials meets the SLA; nothing saved")
        return 1
    provenance = SearchProvenance(
        objective=args.objective,
        trials=args.trials,
        seed=seed,
        command=command_line(args, seed),
        rejected=alternatives(result, base),
    )
    description = (
        f"Found by workbench search: best {args.objective} of {args.trials} trials "
        f"(seed {seed}) meeting the SLA"
    )
    try:
        entry = candidate_entry(packet, result.best.config, args.save_as, description)
    except ConfigRefused as exc:
        raise UsageError(f"--save-as {args.save_as}: {exc}") from None
    entry["provenance"] = provenance.model_dump(mode="python", exclude_none=True)
    candidates = [
        c.model_dump(mode="python", exclude_none=True)
        for c in packet.candidates
        if c.name != args.save_as
    ]
    tree = packet.model_dump(mode="python", exclude_none=True)
    tree["candidates"] = [*candidates, entry]
    try:
        updated = Packet.model_validate(tree)
    except ValueError as exc:  # pydantic's ValidationError: a name the format refuses
        first = exc.errors()[0] if hasattr(exc, "errors") else {"msg": str(exc)}
        raise UsageError(f"--save-as {args.save_as}: {first['msg']}") from None
    write_packet(loaded, updated)
    best = result.best.row
    tails = ""
    if "tpot_p95_ms" in best:
        tails = f"TTFT p95 {best['ttft_p95_ms']:,.2f} ms, TPOT p95 {best['tpot_p95_ms']:,.2f} ms, "
    print(
        f"best: trial {result.best.number}: {tails}p99 {best['latency_p99_ms']:,.2f} ms, "
        f"p95 {best['latency_p95_ms']:,.2f} ms, {best['throughput_per_s']:,.1f}/s; "
        f"{', '.join(knob_texts(base, result.best.config)) or 'the baseline itself'}"
    )
    print(
        f"saved candidate {args.save_as} with {len(provenance.rejected)} rejected "
        f"alternative(s) in {args.packet}"
    )
    return 0


def _front(result, base) -> str:
    from triage.search import knob_texts, serving_front

    serving = serving_front(result.trials)
    columns = SERVING_FRONT_COLUMNS if serving else FRONT_COLUMNS
    rows = [
        {**{c: t.row[c] for c in columns if c not in ("trial", "sla")},
         "trial": t.number, "sla": "ok" if t.feasible else "miss"}
        for t in result.pareto
    ]  # fmt: skip
    knobs = [" ".join(knob_texts(base, t.config)) or "(the baseline)" for t in result.pareto]
    ran = sum(t.row is not None for t in result.trials)
    head = (
        f"{len(result.trials)} trials: {ran} ran, {len(result.trials) - ran} refused by the "
        f"model, {sum(t.feasible for t in result.trials)} meet the SLA. "
        f"Pareto front ({'TPOT p95 against TTFT p95' if serving else 'p99 against throughput'}):"
    )
    if not rows:
        return head + " empty"
    lines = _table(rows, list(columns)).split("\n")
    body = [f"{line}  {k}" for line, k in zip(lines[1:], knobs, strict=True)]
    return "\n".join([head, f"{lines[0]}  knobs", *body])
