"""Where the review steps stand: is each output present and computed from the current inputs,
what the signatures say about the packet's current bytes, and the edits that put outputs into
the working packet.

Textual-free; the Proposal, Validation, Release and Review screens and their done-predicates
call these. Every rule comes from `triage.review` (freshness is the outputs' recorded
`inputs_sha256`, the release decision is `triage.review.release.recommend`); nothing here
decides anything the command line would decide differently.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

from packets.dump import dump_packet
from packets.errors import Problem, UsageError
from packets.files import PACKET, read_regular
from packets.load import LoadedPacket
from packets.schema import Packet, RollbackTrigger, ValidationMatrix
from workbench.core.session import WorkingPacket, apply_edit, sha256_hex
from workbench.core.steps import Progress

if TYPE_CHECKING:
    from packets.signing.packet import VerificationReport

# The triage.review and signing modules load the model and cryptography: they are imported
# where they are used, so the done-predicates of a packet without outputs cost nothing at start.

State = Literal["missing", "stale", "current"]


@dataclass(frozen=True)
class SectionState:
    """Whether an output is there and computed from the packet's current inputs.

    Attributes:
        status: missing (never computed), stale (computed from other inputs, or for another
            proposal) or current.
        detail: one line saying what it holds or why it is stale.
    """

    status: State
    detail: str

    @property
    def current(self) -> bool:
        """True when the output can be relied on as it is."""
        return self.status == "current"


def proposal_state(packet: Packet) -> SectionState:
    """The classification and mitigation proposal: both present and from the current inputs."""
    out = packet.outputs
    if out.classification is None or out.mitigation is None:
        return SectionState("missing", "no proposal yet")
    from packets.fingerprint import inputs_sha256

    digest = inputs_sha256(packet)
    stale = [
        name
        for name in ("classification", "mitigation")
        if getattr(out, name).inputs_sha256 != digest
    ]
    if stale:
        return SectionState("stale", f"{' and '.join(stale)} computed from older inputs")
    m = out.mitigation
    return SectionState("current", f"{m.candidate} on {m.primary_metric}")


def matrix_state(packet: Packet) -> SectionState:
    """The validation matrix: present, for the proposed candidate, from the current inputs."""
    out = packet.outputs
    matrix = out.validation_matrix
    if matrix is None:
        return SectionState("missing", "no validation matrix yet")
    if out.mitigation is None:
        return SectionState("stale", f"matrix for '{matrix.candidate}', but no proposal")
    from packets.fingerprint import inputs_sha256

    if matrix.candidate != out.mitigation.candidate:
        return SectionState(
            "stale",
            f"matrix for '{matrix.candidate}', the proposal is '{out.mitigation.candidate}'",
        )
    if matrix.inputs_sha256 != inputs_sha256(packet):
        return SectionState("stale", "computed from older inputs")
    return SectionState("current", f"{len(matrix.cells)} cells for '{matrix.candidate}'")


def release_state(packet: Packet) -> SectionState:
    """The release recommendation: from the current inputs, and what the rule gives now (a new
    proposal or matrix since it was made makes it stale even when the inputs are the same)."""
    out = packet.outputs
    if out.release is None:
        return SectionState("missing", "no recommendation yet")
    from packets.fingerprint import inputs_sha256
    from triage.review.release import recommend

    if out.release.inputs_sha256 != inputs_sha256(packet):
        return SectionState("stale", "computed from older inputs")
    if out.mitigation is None or out.validation_matrix is None:
        return SectionState("stale", "the proposal or the matrix it rests on is gone")
    decision, reasons = recommend(packet)
    if (decision, reasons) != (out.release.computed, list(out.release.reasons)):
        return SectionState("stale", f"the rule now gives {decision}: recommend again")
    return SectionState("current", out.release.recommendation)


def loaded_from(working: WorkingPacket, raw: bytes | None = None) -> LoadedPacket:
    """The working packet as the `packets` functions take it (`raw`: its bytes, default the
    current bytes, see `current_bytes`)."""
    data = raw if raw is not None else current_bytes(working)
    return LoadedPacket(working.packet, working.name, data, working.base_dir, working.warnings)


def current_bytes(working: WorkingPacket) -> bytes:
    """The packet's bytes as they stand: the file's own bytes (comments and all) while nothing is
    edited, else the canonical bytes a save would write. Signatures are checked against these."""
    if not working.dirty and working.source is not None:
        try:
            data = read_regular(working.source, PACKET)  # never blocks on a FIFO put there
        except UsageError:
            data = None
        if data is not None and sha256_hex(data) == working.source_sha256:
            return data
    return dump_packet(working.packet)


def signature_report(working: WorkingPacket) -> VerificationReport:
    """Every owner role's signature state (missing, valid, stale, invalid) over the current
    bytes: an edit not yet signed makes earlier signatures stale."""
    from packets.signoff import verify_packet

    return verify_packet(loaded_from(working))


def signed_done(progress: Progress) -> bool:
    """Every owner has signed the packet as it stands now, and every signature is valid."""
    working = progress.working
    packet = working.packet
    if working.dirty or len(packet.signatures) < len(packet.owners):
        return False  # quick answers first: an unsaved edit always makes signatures stale
    return signature_report(working).ok


def proposal_done(progress: Progress) -> bool:
    """The proposal (classification and mitigation) is present and current."""
    return proposal_state(progress.working.packet).current


def matrix_done(progress: Progress) -> bool:
    """The matrix is current for the proposed candidate and rollback triggers exist."""
    packet = progress.working.packet
    return matrix_state(packet).current and bool(packet.outputs.rollback_triggers)


def release_done(progress: Progress) -> bool:
    """The release recommendation is current."""
    return release_state(progress.working.packet).current


def set_outputs(working: WorkingPacket, **sections: object) -> WorkingPacket | Problem:
    """The working packet with output sections replaced (an edit checked like any other); text
    typed but refused inside a replaced section is dropped with it."""
    outputs = working.packet.outputs.model_copy(update=sections)
    data = outputs.model_dump(mode="python", exclude_none=True)
    result = apply_edit(working, ("outputs",), data)
    if isinstance(result, Problem):
        return result
    gone = tuple(f"outputs.{name}" for name in sections)
    kept = {k: v for k, v in result.pending.items() if not k.startswith(gone)}
    return replace(result, pending=MappingProxyType(kept))


def triggers_after(packet: Packet, matrix: ValidationMatrix) -> tuple[list[RollbackTrigger], bool]:
    """Rollback triggers to keep with a new matrix, and whether they are the new defaults.

    Triggers still equal to the defaults of the matrix they came from (or none at all) are
    replaced by the new matrix's defaults; triggers a reviewer edited are kept as they are.
    """
    from triage.review.triggers import default_triggers

    found = list(packet.outputs.rollback_triggers)
    old = packet.outputs.validation_matrix
    if not found or (old is not None and found == default_triggers(packet, old)):
        return default_triggers(packet, matrix), True
    return found, False


def keep_pending(new: WorkingPacket, old: WorkingPacket) -> WorkingPacket:
    """`new` (a packet just reloaded from its file) still holding the text `old` had typed but
    not applied, so a reload never loses a draft's refused fields."""
    return replace(new, pending=old.pending)


def artifact_edit(
    packet: Packet, index: int, name: str, value: str | None
) -> tuple[tuple[str | int, ...], object] | str:
    """Where and what to write when owner `index`'s closure artifact field `name` (ref or
    summary) is set to `value` (None clears it): (packet path, value), or why it cannot be.

    An empty ref removes the artifact; a ref on an owner without one creates it; a summary
    needs a ref first.
    """
    owner = packet.owners[index]
    base: tuple[str | int, ...] = ("owners", index, "artifact")
    if name == "ref":
        if value is None:
            return base, None
        if owner.artifact is None:
            return base, {"ref": value}
        return (*base, "ref"), value
    if owner.artifact is None:
        return "record the artifact's ref first"
    return (*base, "summary"), value
