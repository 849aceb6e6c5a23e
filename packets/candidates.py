"""Applying a candidate's overrides to the baseline, and listing what a candidate changes."""

from __future__ import annotations

from typing import Any

from .schema import Candidate, Config, Packet

BASELINE = "baseline"


def find_candidate(packet: Packet, name: str) -> Candidate:
    """The candidate called `name`; KeyError with the valid names when there is none."""
    for candidate in packet.candidates:
        if candidate.name == name:
            return candidate
    names = ", ".join(c.name for c in packet.candidates) or "none"
    raise KeyError(f"no candidate '{name}' in packet '{packet.id}' (candidates: {names})")


def apply_candidate(baseline: Config, candidate: Candidate) -> Config:
    """The baseline with the candidate's overrides: sections replace, patches and tiles merge."""
    update: dict[str, Any] = {}
    for name in ("fusion", "compiled_shapes", "placement", "service"):
        value = getattr(candidate, name)
        if value is not None:
            update[name] = value
    if candidate.tiles is not None:
        update["tiles"] = {**baseline.tiles, **candidate.tiles}
    for name in ("fallback", "batch_policy"):
        patch = getattr(candidate, name)
        if patch is not None:
            base = getattr(baseline, name)
            changes = {k: v for k, v in patch.model_dump().items() if v is not None}
            update[name] = base.model_copy(update=changes)
    return baseline.model_copy(update=update)


def resolve_config(packet: Packet, candidate: str | None = None) -> Config:
    """The configuration to run: the baseline when `candidate` is None or 'baseline'."""
    if candidate in (None, BASELINE):
        return packet.baseline
    return apply_candidate(packet.baseline, find_candidate(packet, candidate))


def resolve_dtype(packet: Packet, candidate: str | None = None) -> str:
    """The precision a configuration runs in (a candidate may change it)."""
    if candidate in (None, BASELINE):
        return packet.inputs.precision.dtype
    return find_candidate(packet, candidate).dtype or packet.inputs.precision.dtype


def changed_knobs(packet: Packet, candidate: str) -> list[str]:
    """Dotted names of every knob the candidate sets to a value different from the baseline."""
    base = packet.baseline.model_dump(mode="json")
    cand = resolve_config(packet, candidate).model_dump(mode="json")
    changed = []
    for section, value in cand.items():
        if isinstance(value, dict) and section != "tiles":
            changed += [f"{section}.{k}" for k, v in value.items() if base[section].get(k) != v]
        elif section == "tiles":
            ops = sorted(set(value) | set(base[section]))
            changed += [f"tiles.{op}" for op in ops if value.get(op) != base[section].get(op)]
        elif base[section] != value:
            changed.append(section)
    if resolve_dtype(packet, candidate) != packet.inputs.precision.dtype:
        changed.append("precision.dtype")
    return changed
