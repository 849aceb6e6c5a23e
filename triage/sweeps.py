"""Grids of packet edits (`workbench sweep --set PATH=V1,V2 ...`) run through the model.

A `--set` path names either a configuration knob (`batch_policy.max_batch`, `placement`,
`fusion`, `compiled_shapes.seq_len`, `fallback.*`, `service.*`, `tiles.OP`; a `baseline.`
prefix is allowed) applied to the swept configuration (the baseline or `--candidate`), or a
packet field (`inputs.workload.arrivals.rate_per_s`, `inputs.hardware.cores`, `seed`, ...).
Values are YAML flow scalars or lists (`[256, 512]`), read by the same strict rules as packet
files, and every point is validated like a packet before anything runs.

A serving packet's points (`batch_policy.scheduler: continuous`) run the continuous scheduler,
as `workbench run` does: the continuous knobs (`batch_policy.max_num_seqs`,
`max_num_batched_tokens`, `chunked_prefill`, `kv_cache_tokens`) apply, and each row carries
TTFT, TPOT and latency tails, tokens/s, preemptions and the serving SLA's verdicts
(triage/serving_scenario.py `serving_row`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import polars as pl
from pydantic import ValidationError

from packets.candidates import resolve_config
from packets.checks import config_problems
from packets.dump import dump_packet
from packets.errors import PacketError, UsageError, dotted
from packets.load import LoadedPacket, parse_packet
from packets.messages import problems_from_validation
from packets.model_checks import config_model_problems
from packets.schema import Config, Packet
from packets.serving_checks import config_serving_problems
from packets.strict_yaml import LoadedYaml, load_yaml
from triage.scenario import Scenario, build_scenario
from triage.serving_scenario import iteration_plan
from triage.workunits import Point, ServingPoint, plan_of, run_points

PACKET_ROOTS = ("inputs", "seed", "owners", "title", "anchor_metric")
DYNAMIC_ONLY = (
    "batch_policy.max_batch",
    "batch_policy.max_queue_delay_ms",
    "batch_policy.bucketing",
    "batch_policy.scheduler",
)
"""Knobs the continuous scheduler does not read: a serving packet's sweep refuses them (its
points would all be the same run)."""


@dataclass(frozen=True)
class Axis:
    """One `--set PATH=V1,V2,...`: a dotted path and its values (as loaded YAML)."""

    path: str
    values: tuple[Any, ...]
    texts: tuple[str, ...]


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets: `1,2` -> ['1','2']; `[1,2],[3]` -> ['[1,2]','[3]']."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        current += char
    parts.append(current)
    return [p.strip() for p in parts]


def parse_axis(text: str) -> Axis:
    """Parse `PATH=V1,V2` (UsageError naming the --set on any problem)."""
    path, sep, rhs = text.partition("=")
    path = path.strip().removeprefix("baseline.")
    if not sep or not path or not rhs.strip():
        raise UsageError(f"--set {text!r}: expected PATH=VALUE[,VALUE...]")
    texts = tuple(_split_top_level(rhs))
    values = []
    for item in texts:
        if not item:
            raise UsageError(f"--set {text!r}: empty value")
        try:
            values.append(load_yaml(f"v: {item}\n".encode(), "--set").data["v"])
        except PacketError as exc:
            raise UsageError(f"--set {path}={item}: {exc.problems[0].message}") from None
    return Axis(path, tuple(values), texts)


def _assign(tree: dict, path: str, value: Any, what: str) -> None:
    keys = path.split(".")
    node = tree
    for key in keys[:-1]:
        if not isinstance(node, dict) or key not in node or not isinstance(node[key], dict):
            raise UsageError(f"--set {what}: no section '{key}' on the way to {path}")
        node = node[key]
    node[keys[-1]] = value


def _invalid(what: str, exc: ValidationError | PacketError, root: type) -> UsageError:
    if isinstance(exc, ValidationError):
        problem = problems_from_validation(root, exc, LoadedYaml(None), "--set")[0]
    else:
        problem = exc.problems[0]
    return UsageError(f"--set {what}: {dotted(problem.path)}: {problem.message}")


def _edited_packet(loaded: LoadedPacket, point: dict[str, tuple[Any, str]]) -> LoadedPacket:
    """The packet with packet-level edits, fully re-validated (semantic and model checks)."""
    edits = {p: v for p, v in point.items() if p.split(".")[0] in PACKET_ROOTS}
    if not edits:
        return loaded
    tree = loaded.packet.model_dump(mode="python")
    what = ", ".join(f"{p}={text}" for p, (_, text) in edits.items())
    for path, (value, _) in edits.items():
        _assign(tree, path, value, what)
    try:
        packet = Packet.model_validate(tree)
        return parse_packet(dump_packet(packet), loaded.name, loaded.base_dir)
    except (ValidationError, PacketError) as exc:
        raise _invalid(what, exc, Packet) from None


def _edited_config(
    loaded: LoadedPacket, candidate: str | None, point: dict[str, tuple[Any, str]]
) -> Config:
    edits = {p: v for p, v in point.items() if p.split(".")[0] not in PACKET_ROOTS}
    config = resolve_config(loaded.packet, candidate)
    if not edits:
        return config
    tree = config.model_dump(mode="python")
    what = ", ".join(f"{p}={text}" for p, (_, text) in edits.items())
    for path, (value, _) in edits.items():
        _assign(tree, path, value, what)
    try:
        config = Config.model_validate(tree)
    except ValidationError as exc:
        raise _invalid(what, exc, Config) from None
    found = [m for _, m, severity in config_problems(config, ()) if severity == "error"]
    found += [
        f"{dotted(path)}: {m}"
        for path, m, severity in config_serving_problems(loaded.packet, config, ())
        if severity == "error"
    ]
    return config if not found else _raise(what, found[0])


def _raise(what: str, message: str):
    raise UsageError(f"--set {what}: {message}")


def _check_serving_axes(loaded: LoadedPacket, axes: Sequence[Axis]) -> None:
    if loaded.packet.inputs.workload.block.phase != "serving":
        return
    for axis in axes:
        if axis.path in DYNAMIC_ONLY:
            raise UsageError(
                f"--set {axis.path}: the dynamic batcher's knob; a serving packet's points run "
                "the continuous scheduler (sweep batch_policy.max_num_seqs, "
                "max_num_batched_tokens, chunked_prefill or kv_cache_tokens)"
            )


def scenarios(
    loaded: LoadedPacket, candidate: str | None, axes: Sequence[Axis]
) -> list[tuple[dict[str, str], Scenario]]:
    """One validated scenario per grid point, in grid order (first axis varies slowest)."""
    _check_serving_axes(loaded, axes)
    points = itertools.product(*[list(zip(a.values, a.texts, strict=True)) for a in axes])
    out = []
    packets: dict[tuple, LoadedPacket] = {}
    for combo in points:
        point = {axis.path: value for axis, value in zip(axes, combo, strict=True)}
        key = tuple((p, t) for p, (_, t) in point.items() if p.split(".")[0] in PACKET_ROOTS)
        if key not in packets:
            packets[key] = _edited_packet(loaded, point)
        edited = packets[key]
        config = _edited_config(edited, candidate, point)
        scenario = build_scenario(edited, candidate, config=config)
        what = ", ".join(f"{p}={t}" for p, (_, t) in point.items())
        dtype = scenario.block.dtype
        found = config_model_problems(edited.packet, config, dtype, scenario.hardware, ())
        if found:
            raise UsageError(f"--set {what}: {'.'.join(map(str, found[0][0]))}: {found[0][1]}")
        out.append(({p: t for p, (_, t) in point.items()}, scenario))
    return out


def grid_points(
    loaded: LoadedPacket, candidate: str | None, axes: Sequence[Axis]
) -> list[Point | ServingPoint]:
    """The grid as work units, in grid order. Every point's plan spans batch sizes up to the
    largest max_batch of the grid, so points that differ only in runtime knobs share a plan
    (and a worker builds its table once). Serving points carry their iteration plan, shared
    likewise by points that differ only in the arrival rate, seed or KV capacity."""
    points = scenarios(loaded, candidate, axes)
    largest = max(s.config.batch_policy.max_batch for _, s in points)
    sizes = range(1, largest + 1)
    return [_point(s, sizes, tuple(labels.items())) for labels, s in points]


def _point(scenario: Scenario, sizes: range, labels: tuple) -> Point | ServingPoint:
    if scenario.is_serving:
        plan = iteration_plan(scenario.config, scenario.serving, scenario.hardware, scenario.block)
        return ServingPoint(scenario.serving, plan, labels)
    return Point(scenario.runtime, plan_of(scenario, sizes), labels)


def run_grid(
    loaded: LoadedPacket,
    candidate: str | None,
    axes: Sequence[Axis],
    executor: Executor | None = None,
    *,
    parallelism: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """Run every grid point and return one row per point: the `--set` values, then headline
    figures (ms, per s, ratios). Runs on `executor` (default: a local thread pool) in chunks
    (triage/workunits.py); rows are the same, in the same order, on any executor."""
    rows = run_points(
        grid_points(loaded, candidate, axes), executor, parallelism=parallelism, progress=progress
    )
    return pl.DataFrame(rows, infer_schema_length=None)
