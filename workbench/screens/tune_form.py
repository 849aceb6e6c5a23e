"""The Tune step's form: which editors it has, what each one edits, and how its text reads.

The configuration knobs come from the packet schema (`form.field_spec`), so bounds and choices
are the schema's; fusion and tiles are edited as text (`lab_config` text forms) and checked by
the model. Editors are identified by DOM id; `TuneField.config_path` is where the edit lands
in the working configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from packets.candidates import BASELINE
from packets.schema import BatchPolicy, CompiledShapes, Config, Packet
from workbench.core.form import FieldSpec, field_spec
from workbench.lab.config import fusion_text, parse_fusion, parse_tile, tile_text, tileable_ops
from workbench.widgets.editors import editor_for
from workbench.widgets.field_editor import FieldEditor

Role = Literal["start", "name", "fusion", "tile", "value"]


@dataclass(frozen=True)
class TuneField:
    """One editor of the Tune form.

    Attributes:
        id: DOM id of the editor.
        spec: what the editor accepts (kind, bounds, choices).
        role: start (which configuration to start from), name (save as), fusion, tile, or
            value (a schema field of the configuration).
        config_path: where an edit lands in the configuration (empty for start and name).
        tile_kind: gemm or attention (tiles only).
    """

    id: str
    spec: FieldSpec
    role: Role
    config_path: tuple[str, ...] = ()
    tile_kind: str = ""

    def text_of(self, config: Config, start: str) -> Any:
        """The value the editor shows for `config` (text for fusion and tiles)."""
        if self.role == "start":
            return start
        if self.role == "name":
            return None
        if self.role == "fusion":
            return fusion_text(config.fusion)
        if self.role == "tile":
            return tile_text(config.tiles.get(self.config_path[1])) or None  # None: autotuned
        node: Any = config
        for part in self.config_path:
            node = getattr(node, part)
        return node

    def value_of(self, read: Any) -> Any:
        """The configuration value for what the editor read (ConfigRefused when the text
        is not a fusion plan or a tile)."""
        if self.role == "fusion":
            return parse_fusion(read)
        if self.role == "tile":
            return parse_tile(self.tile_kind, read or "")
        return read


def _text(path: tuple[str, ...], label: str, description: str, optional: bool) -> FieldSpec:
    return FieldSpec(
        path=path, label=label, kind="text", optional=optional, description=description
    )


def start_spec(packet: Packet) -> FieldSpec:
    """The 'start from' choice: the baseline or any candidate."""
    names = (BASELINE, *(c.name for c in packet.candidates))
    return FieldSpec(path=("tune", "start_from"), label="start from", kind="choice", choices=names)


CONTINUOUS_KNOBS = ("max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "kv_cache_tokens")
"""The continuous batch policy's knobs (a serving packet's Batch policy section)."""
DYNAMIC_KNOBS = ("max_batch", "max_queue_delay_ms", "bucketing")
"""The dynamic batcher's knobs (every other packet's Batch policy section)."""


def tune_sections(packet: Packet) -> list[tuple[str, list[TuneField]]]:
    """The form's sections and their editors, in order. A serving packet (baseline
    `scheduler: continuous`) edits the continuous batch policy instead of the dynamic one."""
    continuous = packet.baseline.batch_policy.scheduler == "continuous"
    tiles = [
        TuneField(
            f"tune-tile-{op}",
            _text(("baseline", "tiles", op), op, f"{kind} tile of {op}", True),
            "tile",
            ("tiles", op),
            kind,
        )
        for op, kind in tileable_ops(packet)
    ]

    def knob(model: type, name: str, *path: str) -> TuneField:
        spec = field_spec(model, name, ("baseline", *path))
        return TuneField(f"tune-{'-'.join(path)}", spec, "value", path)

    return [
        (
            "Start",
            [
                TuneField("tune-start", start_spec(packet), "start"),
                TuneField(
                    "tune-name",
                    _text(("tune", "save_as"), "save as", "candidate name (f4 saves)", True),
                    "name",
                ),
            ],
        ),
        (
            "Fusion and tiles",
            [
                TuneField(
                    "tune-fusion",
                    _text(("baseline", "fusion"), "fusion", "preset or op+op groups", False),
                    "fusion",
                    ("fusion",),
                ),
                *tiles,
            ],
        ),
        (
            "Batch policy",
            [
                knob(BatchPolicy, name, "batch_policy", name)
                for name in (CONTINUOUS_KNOBS if continuous else DYNAMIC_KNOBS)
            ],
        ),
        (
            "Placement and compiled shapes",
            [
                knob(Config, "placement", "placement"),
                knob(CompiledShapes, "seq_len", "compiled_shapes", "seq_len"),
            ],
        ),
    ]


class TileEditor(FieldEditor):
    """A tile: MxNxK for GEMMs, qQxkvKV for attention; empty means autotuned."""

    def placeholder(self) -> str:
        return "auto"


def make_editor(field: TuneField, config: Config, start: str) -> FieldEditor:
    """The editor for one form field, showing `config`'s value."""
    value = field.text_of(config, start)
    if field.role == "tile":
        return TileEditor(field.spec, value, id=field.id)
    if field.role == "fusion":
        return FieldEditor(field.spec, value, id=field.id)
    return editor_for(field.spec, value, id=field.id)
