"""Guided search over a packet's knobs (`workbench search`): Optuna's TPE sampler, seeded.

The space is the configuration the Tune step edits: the fusion preset, the tile plan (the
baseline's, or a tile per GEMM and attention op: `auto`, or a tile the autotuner itself would
consider, one that fits SRAM and the tile granule), the batch policy (max batch, queue delay,
bucketing), the placement and the compiled shapes (the baseline's or a candidate's buckets, or
every shape the workload draws). The first trials are the baseline and the packet's own
candidates (those the space can express), so the search starts from what the team tried. A drawn
configuration is checked like a packet edit (schema, then the model's own checks: tile granule,
SRAM, fusion groups); one the model refuses is told to the sampler as pruned and never runs.
The SLA is a constraint (`Trial.set_constraint`, which TPE samples around): the best candidate is the best trial that
meets every SLA target.

A serving packet (scheduler continuous) searches the continuous scheduler's knobs instead of
the dynamic batcher's: `max_num_seqs`, `max_num_batched_tokens`, `chunked_prefill` (beside the
fusion preset, tiles, placement and compiled shapes), each trial a `ServingPoint`; the SLA's
TTFT and TPOT targets are constraints too, objectives `ttft_p95` and `tpot_p95` (and `tokens`,
output tokens/s) join the three above, and the Pareto front is TPOT p95 against TTFT p95.

Determinism: trials are asked ROUND at a time, in order, each trial's parameters drawn in a
fixed order before any of the round runs (ask/tell, NOTES.md), then the round runs on the
executor and is told in order. The draws depend on the seed and on earlier results only, and
rows are identical on any executor, so a seed gives the same candidate locally and on a
cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from model.compiler.blocks import OPS
from model.compiler.tiles import attention_tile_rows, gemm_tile_rows
from packets.checks import config_problems
from packets.model_checks import config_model_problems
from packets.schema import FUSION_PRESETS, PLACEMENTS, Alternative, Config, Packet, TailFigures
from packets.serving_checks import config_serving_problems
from triage.scenario import build_scenario
from triage.serving_scenario import iteration_plan
from triage.workunits import Point, ServingPoint, plan_of, run_points

if TYPE_CHECKING:
    from packets.load import LoadedPacket
    from triage.scenario import Scenario

OBJECTIVES = {
    "p99": ("latency_p99_ms", "p99_ms"),
    "p95": ("latency_p95_ms", "p95_ms"),
    "throughput": ("throughput_per_s", "throughput_per_s"),
    "ttft_p95": ("ttft_p95_ms", "ttft_p95_ms"),
    "tpot_p95": ("tpot_p95_ms", "tpot_p95_ms"),
    "tokens": ("tokens_per_s", "tokens_per_s"),
}
"""objective -> (row column, the proposal's metric name)."""
SERVING_OBJECTIVES = ("ttft_p95", "tpot_p95", "tokens")
"""Objectives only a serving packet's rows carry."""

ROUND = 8
"""Trials asked before any of them is told. Fixed (not the worker count), so the draws are the
same on any cluster; 8 keeps 2-8 worker threads busy per round."""

MAX_BATCHES = (1, 2, 4, 8, 16, 32, 64)
"""Max batch sizes offered (powers of two, as serving configs use; the baseline's is added)."""

QUEUE_DELAYS_MS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Max queue delays offered, ms (Triton's `max_queue_delay_microseconds` range in practice;
the baseline's is added)."""

MAX_NUM_SEQS = (16, 32, 64, 128, 256)
"""Running sequences per engine offered for a serving packet (vLLM's default is 256; the
baseline's and candidates' are added)."""

TOKEN_BUDGETS = (256, 512, 768, 1024, 2048, 4096, 8192)
"""max_num_batched_tokens offered (chunk sizes as Sarathi-Serve and vLLM use them, up to a
Llama-3-8B context; the baseline's and candidates' are added)."""

TOP_REJECTED = 5
"""Alternatives kept with the saved candidate (the best ones it beat)."""

AUTO = "auto"


def maximize(objective: str) -> bool:
    """True when larger is better (throughput, tokens)."""
    return objective in ("throughput", "tokens")


def _serving(loaded: LoadedPacket) -> bool:
    return loaded.packet.inputs.workload.block.phase == "serving"


def default_objective(packet: Packet) -> str:
    """What a search minimizes unless told: TPOT p95 on a serving packet whose SLA sets a TPOT
    target, else p99 (`workbench search` and Tune's f6)."""
    serving = packet.inputs.workload.block.phase == "serving"
    return "tpot_p95" if serving and packet.inputs.sla.tpot_p95_ms is not None else "p99"


@dataclass(frozen=True)
class Space:
    """The knobs and the choices for each, in the order a trial draws them."""

    choices: tuple[tuple[str, tuple[Any, ...]], ...]

    def names(self) -> list[str]:
        return [name for name, _ in self.choices]


def _tile_label(tile: dict[str, int]) -> str:
    if "q" in tile:
        return f"q{tile['q']}xkv{tile['kv']}"
    return f"{tile['m']}x{tile['n']}x{tile['k']}"


def _tile_of(label: str) -> str | dict[str, int]:
    if label == AUTO:
        return AUTO
    if label.startswith("q"):
        q, kv = label[1:].split("xkv")
        return {"q": int(q), "kv": int(kv)}
    m, n, k = (int(v) for v in label.split("x"))
    return {"m": m, "n": n, "k": k}


def _shapes_label(shapes: Sequence[int]) -> str:
    return ",".join(str(s) for s in shapes)


TILE_PLAN = "tiles"
"""The tile knob: `baseline` keeps the baseline's tile plan (autotuned where it says nothing);
`per-op` draws a tile per op. Half the draws start from the autotuner's own plan that way,
instead of 1 in 13 per op."""


def _configs(loaded: LoadedPacket) -> list[tuple[str, Config]]:
    """The baseline and the packet's candidates that keep its precision and model service."""
    from packets.candidates import resolve_config, resolve_dtype

    out = [("baseline", loaded.packet.baseline)]
    for c in loaded.packet.candidates:
        config = resolve_config(loaded.packet, c.name)
        if resolve_dtype(loaded.packet, c.name) == loaded.packet.inputs.precision.dtype and (
            config.service == loaded.packet.baseline.service
        ):
            out.append((c.name, config))
    return out


def search_space(loaded: LoadedPacket) -> Space:
    """The packet's search space (see the module docstring); the baseline's and candidates'
    own values are among the choices."""
    baseline = build_scenario(loaded)
    block, hw = baseline.block, baseline.hardware
    size = block.bytes_per_element
    known = [c for _, c in _configs(loaded)]
    gemm = sorted({(m, n, k) for m, n, k, split in gemm_tile_rows(hw, size) if split == 1})
    attention = sorted({(q, kv) for q, kv, _ in attention_tile_rows(hw, block.head_dim, size)})
    tiles = []
    for op in block.op_names:
        kind = OPS[op].kind
        if kind == "gemm":
            labels = [_tile_label({"m": m, "n": n, "k": k}) for m, n, k in gemm]
        elif kind == "attention":
            labels = [_tile_label({"q": q, "kv": kv}) for q, kv in attention]
        else:
            continue
        tiles.append((f"tiles.{op}", (AUTO, *labels)))
    every = sorted(set(loaded.packet.inputs.workload.shapes.seq_len.values)
                   | set(loaded.packet.baseline.compiled_shapes.seq_len))  # fmt: skip
    compiled = [_shapes_label(c.compiled_shapes.seq_len) for c in known]
    if _serving(loaded):
        from model.runtime.serving_rules import SERVING_PLACEMENTS

        policy = [c.batch_policy for c in known]
        return Space(
            (
                ("fusion", FUSION_PRESETS),
                (TILE_PLAN, ("baseline", "per-op")),
                *tiles,
                ("batch_policy.max_num_seqs",
                 tuple(sorted({*MAX_NUM_SEQS, *(p.max_num_seqs for p in policy)}))),
                ("batch_policy.max_num_batched_tokens",
                 tuple(sorted({*TOKEN_BUDGETS, *(p.max_num_batched_tokens for p in policy)}))),
                ("batch_policy.chunked_prefill", (False, True)),
                ("placement", tuple(SERVING_PLACEMENTS)),
                ("compiled_shapes.seq_len", tuple(dict.fromkeys([*compiled, _shapes_label(every)]))),
            )
        )  # fmt: skip
    return Space(
        (
            ("fusion", FUSION_PRESETS),
            (TILE_PLAN, ("baseline", "per-op")),
            *tiles,
            ("batch_policy.max_batch",
             tuple(sorted({*MAX_BATCHES, *(c.batch_policy.max_batch for c in known)}))),
            ("batch_policy.max_queue_delay_ms",
             tuple(sorted({*QUEUE_DELAYS_MS, *(c.batch_policy.max_queue_delay_ms for c in known)}))),
            ("batch_policy.bucketing", (False, True)),
            ("placement", PLACEMENTS),
            ("compiled_shapes.seq_len", tuple(dict.fromkeys([*compiled, _shapes_label(every)]))),
        )
    )  # fmt: skip


def draw(trial: Any, space: Space) -> dict[str, Any]:
    """A trial's parameters, drawn in the space's order (per-op tiles only under `per-op`)."""
    params: dict[str, Any] = {}
    for name, choices in space.choices:
        if name.startswith("tiles.") and params.get(TILE_PLAN) != "per-op":
            continue
        params[name] = trial.suggest_categorical(name, list(choices))
    return params


def starting_points(loaded: LoadedPacket, space: Space) -> list[dict[str, Any]]:
    """The baseline and the packet's candidates as trials (those the space can express): the
    search starts from what the team already tried."""
    choices = dict(space.choices)
    base = loaded.packet.baseline
    out = []
    for _, config in _configs(loaded):
        params: dict[str, Any] = {"fusion": config.fusion}
        if config.tiles == base.tiles:
            params[TILE_PLAN] = "baseline"
        else:
            params[TILE_PLAN] = "per-op"
            for name in choices:
                if name.startswith("tiles."):
                    tile = config.tiles.get(name.removeprefix("tiles."), AUTO)
                    params[name] = tile if tile == AUTO else _tile_label(tile.model_dump())
        policy = config.batch_policy
        if _serving(loaded):
            params["batch_policy.max_num_seqs"] = policy.max_num_seqs
            params["batch_policy.max_num_batched_tokens"] = policy.max_num_batched_tokens
            params["batch_policy.chunked_prefill"] = bool(policy.chunked_prefill)
        else:
            params["batch_policy.max_batch"] = policy.max_batch
            params["batch_policy.max_queue_delay_ms"] = policy.max_queue_delay_ms
            params["batch_policy.bucketing"] = policy.bucketing
        params["placement"] = config.placement
        params["compiled_shapes.seq_len"] = _shapes_label(config.compiled_shapes.seq_len)
        if all(value in choices.get(name, ()) for name, value in params.items()):
            out.append(params)
    return out


def config_of(base: Config, params: dict[str, Any]) -> Config:
    """The baseline with a trial's parameters (ValidationError if the schema refuses it)."""
    tree = base.model_dump(mode="python")
    for name, value in params.items():
        if name == TILE_PLAN:
            continue
        if name.startswith("tiles."):
            op = name.removeprefix("tiles.")
            if value == AUTO and base.tiles.get(op, AUTO) == AUTO:
                tree["tiles"].pop(op, None)  # autotuned, as in the baseline: nothing to write
            else:
                tree["tiles"][op] = _tile_of(value)
        elif name == "compiled_shapes.seq_len":
            tree["compiled_shapes"]["seq_len"] = [int(v) for v in value.split(",")]
        elif "." in name:
            section, field = name.split(".")
            tree[section][field] = value
        else:
            tree[name] = value
    return Config.model_validate(tree)


def refusal(loaded: LoadedPacket, config: Config, baseline: Scenario) -> str | None:
    """The first problem the packet checks or the model find in `config`, else None."""
    errors = [m for _, m, severity in config_problems(config, ()) if severity == "error"]
    errors += [
        f"{'.'.join(map(str, path))}: {m}"
        for path, m, severity in config_serving_problems(loaded.packet, config, ())
        if severity == "error"
    ]
    if errors:
        return errors[0]
    found = config_model_problems(
        loaded.packet, config, baseline.block.dtype, baseline.hardware, ()
    )
    return f"{'.'.join(map(str, found[0][0]))}: {found[0][1]}" if found else None


@dataclass(frozen=True)
class Trial:
    """One trial: its number, drawn parameters, configuration (None if the schema refused
    it), the model's refusal (None if it ran) and its row of headline figures."""

    number: int
    params: tuple[tuple[str, Any], ...]
    config: Config | None
    refused: str | None
    row: dict | None

    @property
    def feasible(self) -> bool:
        """Ran and met every SLA target (a serving row's TTFT and TPOT targets included)."""
        return self.row is not None and all(
            self.row.get(k) is not False
            for k in ("p95_ok", "p99_ok", "throughput_ok", "ttft_p95_ok", "tpot_p95_ok")
        )

    def tail(self) -> TailFigures:
        r = self.row or {}
        serving = {k: r[k] for k in ("ttft_p95_ms", "tpot_p95_ms", "tokens_per_s") if k in r}
        return TailFigures(
            p99_ms=r["latency_p99_ms"], p95_ms=r["latency_p95_ms"], p50_ms=r["latency_p50_ms"],
            mean_ms=r["latency_mean_ms"], throughput_per_s=r["throughput_per_s"],
            sla_ok=self.feasible, **serving,
        )  # fmt: skip


@dataclass(frozen=True)
class SearchResult:
    """Every trial in order, the best feasible one (None: no trial met the SLA), the top
    rejected alternatives and the Pareto front (p99 against throughput, over trials that ran)."""

    objective: str
    seed: int
    trials: tuple[Trial, ...]
    best: Trial | None
    rejected: tuple[Trial, ...]
    pareto: tuple[Trial, ...]


def _score(trial: Trial, objective: str) -> float:
    value = trial.row[OBJECTIVES[objective][0]]  # type: ignore[index]
    return -value if maximize(objective) else value


def serving_front(trials: Sequence[Trial]) -> bool:
    """True when the trials are serving rows (their front is TPOT p95 against TTFT p95)."""
    return any(t.row is not None and "tpot_p95_ms" in t.row for t in trials)


def front_axes(trials: Sequence[Trial]) -> tuple[str, str]:
    """The Pareto front's two row columns, each lower-is-better after `_front_value`:
    (latency_p99_ms, throughput_per_s), or for serving rows (tpot_p95_ms, ttft_p95_ms)."""
    if serving_front(trials):
        return ("tpot_p95_ms", "ttft_p95_ms")
    return ("latency_p99_ms", "throughput_per_s")


def _front_value(row: dict, column: str) -> float:
    return -row[column] if column == "throughput_per_s" else row[column]


def pareto_front(trials: Sequence[Trial]) -> list[Trial]:
    """Trials no other trial beats on both axes (`front_axes`: p99 lower and throughput
    higher; serving: TPOT p95 and TTFT p95 lower), by the first axis."""
    ran = [t for t in trials if t.row is not None]
    first, second = front_axes(ran)

    def key(t: Trial) -> tuple[float, float]:
        return _front_value(t.row, first), _front_value(t.row, second)  # type: ignore[arg-type]

    def dominated(t: Trial) -> bool:
        a, b = key(t)
        return any(
            key(o)[0] <= a and key(o)[1] <= b and (key(o)[0] < a or key(o)[1] < b) for o in ran
        )

    front = [t for t in ran if not dominated(t)]
    return sorted(front, key=lambda t: (key(t)[0], t.number))


def _constraints(row: dict, sla) -> dict[str, float]:
    """Per SLA target, <= 0 where it is met (Optuna's constraint convention)."""
    out = {}
    if sla.p95_ms is not None:
        out["p95_ms"] = row["latency_p95_ms"] - sla.p95_ms
    if sla.p99_ms is not None:
        out["p99_ms"] = row["latency_p99_ms"] - sla.p99_ms
    if sla.min_throughput_per_s is not None:
        out["throughput_per_s"] = sla.min_throughput_per_s - row["throughput_per_s"]
    for name in ("ttft_p95_ms", "tpot_p95_ms"):  # serving rows only
        target = getattr(sla, name, None)
        if target is not None and row.get(name) is not None:
            out[name] = row[name] - target
    return out


def run_search(
    loaded: LoadedPacket,
    trials: int,
    seed: int,
    objective: str = "p99",
    executor: Executor | None = None,
    *,
    parallelism: int | None = None,
    requests: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SearchResult:
    """Run `trials` trials of the guided search (ValueError for an unknown objective)."""
    import optuna
    from optuna.trial import TrialState

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}")
    if objective in SERVING_OBJECTIVES and not _serving(loaded):
        raise ValueError(f"objective {objective} needs a serving packet (continuous batching)")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = search_space(loaded)
    baseline = build_scenario(loaded)
    base = loaded.packet.baseline
    sla = loaded.packet.inputs.sla
    sampler = optuna.samplers.TPESampler(seed=seed % 2**32)  # numpy's RandomState takes 32 bits
    study = optuna.create_study(
        direction="maximize" if maximize(objective) else "minimize", sampler=sampler
    )
    for params in starting_points(loaded, space):
        study.enqueue_trial(params)
    done: list[Trial] = []
    if progress is not None:
        progress(0, trials)
    for start in range(0, trials, ROUND):
        asked = []
        for _ in range(min(ROUND, trials - start)):
            trial = study.ask()
            params = draw(trial, space)
            try:
                config = config_of(base, params)
                refused = refusal(loaded, config, baseline)
            except ValidationError as exc:
                config, refused = None, str(exc.errors()[0]["msg"])
            asked.append((trial, params, config, refused))
        runnable = [(t, c) for t, _, c, r in asked if r is None]
        points = [
            _point(loaded, c, requests)
            for _, c in runnable  # type: ignore[arg-type]
        ]
        rows = iter(run_points(points, executor, parallelism=parallelism))
        for trial, params, config, refused in asked:
            row = next(rows) if refused is None else None
            if row is None:
                study.tell(trial, state=TrialState.PRUNED)
            else:
                for key, value in _constraints(row, sla).items():
                    trial.set_constraint(key, value)
                study.tell(trial, row[OBJECTIVES[objective][0]])
            done.append(Trial(trial.number, tuple(params.items()), config, refused, row))
        if progress is not None:
            progress(len(done), trials)
    return _result(done, objective, seed)


def _point(loaded: LoadedPacket, config: Config, requests: int | None) -> Point | ServingPoint:
    scenario = build_scenario(loaded, config=config, requests=requests)
    if scenario.is_serving:
        plan = iteration_plan(scenario.config, scenario.serving, scenario.hardware, scenario.block)
        return ServingPoint(scenario.serving, plan)
    return Point(scenario.runtime, plan_of(scenario))


def _result(done: list[Trial], objective: str, seed: int) -> SearchResult:
    """Best: the best trial meeting the SLA. Rejected: the next best distinct configurations,
    those meeting the SLA first, then those missing it (each one's reason says which)."""
    ranked = sorted(
        (t for t in done if t.row is not None),
        key=lambda t: (not t.feasible, _score(t, objective), t.number),
    )
    best = ranked[0] if ranked and ranked[0].feasible else None
    rejected: list[Trial] = []
    if best is not None:
        seen = {best.config.model_dump_json()}  # type: ignore[union-attr]
        for t in ranked[1:]:
            key = t.config.model_dump_json()  # type: ignore[union-attr]
            if key not in seen and len(rejected) < TOP_REJECTED:
                seen.add(key)
                rejected.append(t)
    return SearchResult(
        objective, seed, tuple(done), best, tuple(rejected), tuple(pareto_front(done))
    )


def knob_texts(base: Config, config: Config) -> list[str]:
    """`path=value` for every knob `config` sets differently from the baseline."""
    a, b = base.model_dump(mode="json"), config.model_dump(mode="json")
    out = []
    for section in b:
        if section == "tiles":
            for op in sorted(set(a["tiles"]) | set(b["tiles"])):
                mine, theirs = b["tiles"].get(op, AUTO), a["tiles"].get(op, AUTO)
                if mine != theirs:
                    out.append(f"tiles.{op}={_tile_label(mine) if mine != AUTO else AUTO}")
        elif isinstance(b[section], dict) and section != "service":
            out += [f"{section}.{k}={_text(v)}" for k, v in b[section].items()
                    if a[section].get(k) != v]  # fmt: skip
        elif a[section] != b[section]:
            out.append(f"{section}={_text(b[section])}")
    return out


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return f"{value:g}"
    return str(value)


def alternatives(result: SearchResult, base: Config) -> list[Alternative]:
    """The rejected alternatives as the proposal records them (tail, knobs, why each lost)."""
    from triage.review.proposal import rejection_reason

    metric = OBJECTIVES[result.objective][1]
    chosen = result.best.tail()  # type: ignore[union-attr]
    out = []
    for t in result.rejected:
        knobs = knob_texts(base, t.config)  # type: ignore[arg-type]
        out.append(
            Alternative(
                candidate=f"trial-{t.number}",
                knobs=knobs,
                tail=t.tail(),
                reason=rejection_reason(metric, t.tail(), chosen, knobs),
            )
        )
    return out
