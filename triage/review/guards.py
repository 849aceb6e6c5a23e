"""Review guards from the seeds' pitfalls, enforced before signing and export.

Each guard passes, warns, or blocks. Blocking guards:
- every claim cites its workload slice and one primary metric (classification and mitigation
  present, with a slice and a primary metric, computed from the current inputs);
- a precision change needs quality evidence (measured quality for the new dtype meeting the
  threshold) and a fallback path (a rollback trigger on the quality metric);
- a fusion or tile change must be validated against memory constraints (a current validation
  matrix for that candidate, with its memory check);
- a validation matrix, rollback triggers and a current release recommendation exist;
- every owner carries a closure artifact.
Warnings: validation on synthetic shapes only (no production mix), a broad tuning bundle (more
than three knobs), and a memory check that found spill, SRAM overflow or higher HBM bursts.
"""

from __future__ import annotations

from dataclasses import dataclass

from packets.candidates import resolve_config, resolve_dtype
from packets.fingerprint import inputs_sha256
from packets.schema import ROLES_BY_TOPIC, Packet

PASS, WARN, BLOCK = "pass", "warn", "block"


@dataclass(frozen=True)
class Guard:
    """One review guard's verdict: `status` is pass, warn or block; `detail` says why."""

    id: str
    title: str
    status: str
    detail: str


def _current(section, digest: str) -> bool:
    return section is not None and section.inputs_sha256 == digest


def _slices(packet: Packet, digest: str) -> Guard:
    title = "every claim cites its workload slice and one primary metric"
    out = packet.outputs
    missing = [n for n in ("classification", "mitigation") if getattr(out, n) is None]
    if missing:
        return Guard("slices", title, BLOCK, f"no {' or '.join(missing)} yet (workbench propose)")
    stale = [n for n in ("classification", "mitigation") if not _current(getattr(out, n), digest)]
    if stale:
        return Guard("slices", title, BLOCK, f"{', '.join(stale)} computed from older inputs")
    m = out.mitigation
    return Guard(
        "slices",
        title,
        PASS,
        f"{m.primary_metric} on `{m.slice.command}`; baseline slice "
        f"`{out.classification.slice.command}`",
    )


def _precision(packet: Packet) -> Guard:
    title = "a precision change has quality evidence and a fallback path"
    m = packet.outputs.mitigation
    if m is None:
        return Guard("precision", title, PASS, "no proposal yet")
    base, new = packet.inputs.precision.dtype, resolve_dtype(packet, m.candidate)
    if new == base:
        return Guard("precision", title, PASS, f"no precision change ({base})")
    quality = packet.inputs.precision.quality
    measured = quality.measured.get(new)
    if measured is None:
        return Guard(
            "precision", title, BLOCK, f"{base} -> {new} without measured {quality.metric}"
        )
    meets = (
        measured >= quality.threshold if quality.higher_is_better else measured <= quality.threshold
    )
    if not meets:
        return Guard(
            "precision",
            title,
            BLOCK,
            f"{new} measures {quality.metric} {measured}, threshold {quality.threshold}",
        )
    if not any(t.metric == f"quality.{quality.metric}" for t in packet.outputs.rollback_triggers):
        return Guard(
            "precision",
            title,
            BLOCK,
            f"{base} -> {new} has no fallback path: add a rollback trigger on quality.{quality.metric}",
        )
    return Guard(
        "precision",
        title,
        PASS,
        f"{new}: {quality.metric} {measured} meets {quality.threshold}; trigger reverts to {base}",
    )


def _memory(packet: Packet, digest: str) -> list[Guard]:
    title = "fusion and tiles validated against memory constraints"
    m, matrix = packet.outputs.mitigation, packet.outputs.validation_matrix
    if m is None:
        return [Guard("memory", title, PASS, "no proposal yet")]
    cand, base = resolve_config(packet, m.candidate), packet.baseline
    if cand.fusion == base.fusion and cand.tiles == base.tiles:
        return [Guard("memory", title, PASS, "no fusion or tile change")]
    if matrix is None or matrix.candidate != m.candidate or not _current(matrix, digest):
        return [Guard("memory", title, BLOCK,
                      f"fusion/tile change in '{m.candidate}' not validated: run workbench validate")]  # fmt: skip
    verdict = matrix.memory.verdict
    worse = matrix.memory.spill_mb_per_request > matrix.memory.baseline_spill_mb_per_request
    higher = (matrix.memory.hbm_peak_demand_ratio_max or 0) > (
        matrix.memory.baseline_hbm_peak_demand_ratio_max or 0
    )
    status = WARN if (matrix.memory.sram_over_capacity or worse or higher) else PASS
    return [Guard("memory", title, status, verdict)]


def _shapes(packet: Packet) -> Guard:
    title = "validated on the production shape mix"
    if packet.inputs.workload.shape_source == "production":
        return Guard("shapes", title, PASS, "the packet's shape mix comes from production")
    return Guard(
        "shapes",
        title,
        WARN,
        "validation ran on synthetic shapes only: no production mix (pitfall: "
        "optimising synthetic kernels without production-shape validation)",
    )


def _bundle(packet: Packet) -> Guard:
    title = "a bounded fix with a clear owner and rollback boundary"
    m = packet.outputs.mitigation
    if m is None or not m.broad_tuning_bundle:
        return Guard("bundle", title, PASS, f"{len(m.knobs) if m else 0} knob(s) changed")
    return Guard(
        "bundle", title, WARN, f"broad tuning bundle: {len(m.knobs)} knobs ({', '.join(m.knobs)})"
    )


def _evidence(packet: Packet, digest: str) -> list[Guard]:
    out = packet.outputs
    m = out.mitigation
    found = []
    if out.validation_matrix is None or m is None or out.validation_matrix.candidate != m.candidate:
        found.append(
            Guard(
                "matrix",
                "validation matrix for the proposed candidate",
                BLOCK,
                "run workbench validate",
            )
        )
    elif not _current(out.validation_matrix, digest):
        found.append(
            Guard(
                "matrix",
                "validation matrix for the proposed candidate",
                BLOCK,
                "computed from older inputs: run workbench validate again",
            )
        )
    else:
        cells = out.validation_matrix.cells
        found.append(
            Guard(
                "matrix",
                "validation matrix for the proposed candidate",
                PASS,
                f"{len(cells)} cells",
            )
        )
    found.append(
        Guard(
            "triggers",
            "rollback triggers",
            PASS if out.rollback_triggers else BLOCK,
            f"{len(out.rollback_triggers)} trigger(s)"
            if out.rollback_triggers
            else "no rollback triggers (workbench validate writes defaults)",
        )
    )
    if out.release is None:
        found.append(Guard("release", "release recommendation", BLOCK, "run workbench recommend"))
    elif not _current(out.release, digest):
        found.append(
            Guard("release", "release recommendation", BLOCK, "computed from older inputs")
        )
    else:
        found.append(Guard("release", "release recommendation", PASS, out.release.recommendation))
    return found


def _artifacts(packet: Packet) -> Guard:
    title = "every owner carries a closure artifact"
    roles = ROLES_BY_TOPIC[packet.topic]
    missing = [f"{o.role} ({roles.get(o.role, '')})" for o in packet.owners if o.artifact is None]
    if missing:
        return Guard("artifacts", title, BLOCK, "missing: " + "; ".join(missing))
    return Guard("artifacts", title, PASS, ", ".join(o.artifact.ref for o in packet.owners))


def review_guards(packet: Packet) -> list[Guard]:
    """Every guard, in the order the review screen shows them."""
    digest = inputs_sha256(packet)
    return [
        _slices(packet, digest),
        _precision(packet),
        *_memory(packet, digest),
        _shapes(packet),
        _bundle(packet),
        *_evidence(packet, digest),
        _artifacts(packet),
    ]


def blocking(guards: list[Guard]) -> list[Guard]:
    """The guards that block signing and export."""
    return [g for g in guards if g.status == BLOCK]
