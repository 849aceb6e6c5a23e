"""Editing the lab's working configuration, and saving it as a packet candidate (textual-free).

Every edit goes through the same checks a packet's configuration does: the schema
(`packets.schema.Config`), the configuration's own rules (`packets.checks.config_problems`) and
the model's checks (`packets.model_checks.config_model_problems`: fusion groups, tiles on this
hardware). A refused edit raises `ConfigRefused` with the one-line reason to show in place.

Text forms (what the Tune step's fields show and read):
- fusion: a preset (`none`, `standard`, `aggressive`) or kernel groups, ops joined by `+` and
  groups separated by commas: `attn_norm+qkv_proj+rope, attention, out_proj+attn_residual, ...`.
- tiles: GEMM `MxNxK` (`128x256x64`), attention `qQxkvKV` (`q64xkv128`, or `64x128`); empty or
  `auto` leaves the op to the autotuner.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from packets.candidates import apply_candidate
from packets.checks import config_problems
from packets.errors import PacketError, dotted
from packets.messages import problems_from_validation
from packets.schema import FUSION_PRESETS, AttentionTile, Candidate, Config, GemmTile, Packet
from packets.strict_yaml import LoadedYaml
from workbench.lab.engine import Subject

Path_ = tuple[str | int, ...]
AUTO = "auto"
_GEMM_TILE = re.compile(r"^(\d+)\s*x\s*(\d+)\s*x\s*(\d+)$")
_ATTENTION_TILE = re.compile(r"^q?(\d+)\s*x\s*(?:kv)?(\d+)$")


class ConfigRefused(ValueError):
    """An edit the working configuration cannot take; the message is one line."""


# --- text forms ----------------------------------------------------------------------------


def fusion_text(fusion: str | Sequence[Sequence[str]]) -> str:
    """The text a fusion plan is edited as: a preset name, or `op+op, op, ...` groups."""
    if isinstance(fusion, str):
        return fusion
    return ", ".join("+".join(group) for group in fusion)


def parse_fusion(text: str) -> str | list[list[str]]:
    """A fusion plan from its text form (the model checks the groups afterwards)."""
    stripped = text.strip()
    if not stripped:
        raise ConfigRefused(f"enter a preset ({', '.join(FUSION_PRESETS)}) or op+op groups")
    if "+" not in stripped and "," not in stripped:
        if stripped not in FUSION_PRESETS:
            raise ConfigRefused(
                f"unknown preset '{stripped}': use {', '.join(FUSION_PRESETS)} or op+op groups"
            )
        return stripped
    groups = [[op.strip() for op in group.split("+")] for group in stripped.split(",")]
    if any(not op for group in groups for op in group):
        raise ConfigRefused("empty op: join ops with single '+' and groups with single ','")
    return groups


def tile_text(tile: Any) -> str:
    """The text a tile is edited as ('' when the op is autotuned)."""
    if isinstance(tile, GemmTile):
        return f"{tile.m}x{tile.n}x{tile.k}"
    if isinstance(tile, AttentionTile):
        return f"q{tile.q}xkv{tile.kv}"
    return ""


def parse_tile(kind: str, text: str) -> dict[str, int] | None:
    """A tile ({m, n, k} for a GEMM, {q, kv} for attention) from its text; None: autotune."""
    stripped = text.strip().lower()
    if stripped in ("", AUTO):
        return None
    if kind == "gemm":
        match = _GEMM_TILE.match(stripped)
        if not match:
            raise ConfigRefused(f"write MxNxK (e.g. 128x128x64) or auto, got '{text.strip()}'")
        return dict(zip(("m", "n", "k"), map(int, match.groups()), strict=True))
    match = _ATTENTION_TILE.match(stripped)
    if not match:
        raise ConfigRefused(f"write qQxkvKV (e.g. q64xkv128) or auto, got '{text.strip()}'")
    return dict(zip(("q", "kv"), map(int, match.groups()), strict=True))


def tileable_ops(packet: Packet) -> list[tuple[str, str]]:
    """(op, kind) of every op of the packet's block that takes a tile (GEMMs, attention)."""
    from model.compiler.blocks import OPS
    from packets.model_specs import block_spec

    block = block_spec(packet.inputs.workload.block, packet.inputs.precision.dtype)
    return [(op, OPS[op].kind) for op in block.op_names if OPS[op].kind != "elementwise"]


# --- edits ---------------------------------------------------------------------------------


def _first_problem(problems: list[tuple[Path_, str]], path: Path_) -> str:
    """The problem at the edited field, else the first one with where it is."""
    for where, message in problems:
        if tuple(where) == tuple(path):
            return message
    where, message = problems[0]
    return f"{dotted(where)}: {message}"


def edit_config(subject: Subject, path: Path_, value: Any) -> Config:
    """`subject.config` with the field at `path` set to `value` (None removes it; a tile of
    None means autotune), checked like a packet's configuration. Raises ConfigRefused."""
    from packets.model_checks import config_model_problems

    packet, base = subject.loaded.packet, subject.loaded.packet.baseline
    tree = subject.config.model_dump(mode="python", exclude_none=True)
    if path[0] == "tiles" and value is None:
        # Autotune: drop the pin, or (when the baseline pins this op) say `auto` explicitly,
        # since a candidate's tiles merge over the baseline's.
        tree["tiles"].pop(path[1], None)
        value = AUTO if path[1] in base.tiles else None
    node = tree
    for part in path[:-1]:
        node = node.setdefault(part, {}) if isinstance(node, dict) else node[part]
    if value is None:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    try:
        config = Config.model_validate(tree)
    except ValidationError as exc:
        found = problems_from_validation(Config, exc, LoadedYaml(None), subject.loaded.name)
        raise ConfigRefused(_first_problem([(p.path, p.message) for p in found], path)) from None
    errors = [(p, m) for p, m, severity in config_problems(config, ()) if severity == "error"]
    if not errors:
        try:
            hardware = subject.hardware  # resolved once per packet (the run uses it too)
        except PacketError as exc:
            raise ConfigRefused(exc.problems[0].message) from None
        errors = config_model_problems(packet, config, subject.dtype, hardware, ())
    if errors:
        raise ConfigRefused(_first_problem(errors, path))
    return config


# --- saving as a candidate -----------------------------------------------------------------


def _dump(value: Any) -> Any:
    return (
        value.model_dump(mode="python", exclude_none=True)
        if hasattr(value, "model_dump")
        else value
    )


def changed_sections(baseline: Config, config: Config) -> list[str]:
    """Dotted names of the knobs `config` sets differently from the baseline."""
    changed: list[str] = []
    for name in ("fusion", "compiled_shapes", "placement", "service"):
        if getattr(config, name) != getattr(baseline, name):
            changed.append(name)
    for op in sorted(set(config.tiles) | set(baseline.tiles)):
        if config.tiles.get(op, AUTO) != baseline.tiles.get(op, AUTO):
            changed.append(f"tiles.{op}")
    for section in ("fallback", "batch_policy"):
        ours, theirs = getattr(config, section), getattr(baseline, section)
        changed += [
            f"{section}.{name}"
            for name in type(ours).model_fields
            if getattr(ours, name) != getattr(theirs, name)
        ]
    return changed


def candidate_entry(
    packet: Packet, config: Config, name: str, description: str, dtype: str | None = None
) -> dict[str, Any]:
    """The `candidates[]` entry (plain data) that turns the baseline into `config`, setting
    only what differs; `dtype` when the candidate runs in another precision."""
    base = packet.baseline
    entry: dict[str, Any] = {"name": name, "description": description}
    if dtype is not None and dtype != packet.inputs.precision.dtype:
        entry["dtype"] = dtype
    for section in ("fusion", "compiled_shapes", "placement", "service"):
        if getattr(config, section) != getattr(base, section):
            entry[section] = _dump(getattr(config, section))
    tiles = {
        op: _dump(config.tiles.get(op, AUTO))
        for op in sorted(set(config.tiles) | set(base.tiles))
        if config.tiles.get(op, AUTO) != base.tiles.get(op, AUTO)
    }
    if tiles:
        entry["tiles"] = tiles
    for section in ("fallback", "batch_policy"):
        ours, theirs = getattr(config, section), getattr(base, section)
        patch = {
            field: getattr(ours, field)
            for field in type(ours).model_fields
            if getattr(ours, field) != getattr(theirs, field)
        }
        if patch:
            entry[section] = patch
    try:
        resolved = apply_candidate(base, Candidate.model_validate(entry))
    except ValidationError as exc:
        found = problems_from_validation(Candidate, exc, LoadedYaml(None), "candidate")
        raise ConfigRefused(f"{dotted(found[0].path)}: {found[0].message}") from None
    if resolved.model_dump(mode="json") != config.model_dump(mode="json"):
        raise ConfigRefused("this configuration cannot be written as a candidate of the baseline")
    return entry


def describe(baseline: Config, config: Config) -> str:
    """A one-line description of a lab candidate: the knobs it changes."""
    changed = changed_sections(baseline, config)
    return "Tuned in the lab: " + (", ".join(changed) if changed else "no knob changed")
