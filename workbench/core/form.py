"""What the Packet step can edit: one `FieldSpec` per input field, read from the packet schema.

Textual-free. The schema is the single source: kinds, bounds, units and optionality come from
the pydantic models in `packets.schema`, so a field added there shows up in the form. Text a
user types is turned into a value by `parse_text` (number syntax is YAML 1.2, as in packets);
the whole-packet checks run afterwards in `session.apply_edit`.
"""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from packets.schema import Inputs
from packets.strict_yaml import parse_number

Path_ = tuple[str | int, ...]
Kind = Literal["integer", "number", "text", "choice", "bool", "numbers", "mapping"]

# Units by field-name suffix (the schema puts units in names: packets/schema.py).
UNIT_SUFFIXES = (
    ("_tflops", "TFLOP/s"),
    ("_kib_per_unit", "KiB"),
    ("_per_s", "/s"),
    ("_ms", "ms"),
    ("_us", "us"),
    ("_gbs", "GB/s"),
    ("_kib", "KiB"),
    ("_mib", "MiB"),
)
UNIT_BY_NAME = {"clock_scale": "x"}

SECTION_TITLES = {
    "workload": "Workload profile",
    "sla": "SLA target",
    "precision": "Precision and quality",
    "metadata": "Compiler, runtime and firmware",
    "hardware": "Hardware envelope",
}


@dataclass(frozen=True)
class FieldSpec:
    """One editable leaf of the packet's `inputs`.

    Attributes:
        path: position in the packet, e.g. ('inputs', 'sla', 'p95_ms').
        label: short dotted name shown next to the field, e.g. 'sla.p95_ms'.
        kind: how text is read: integer, number, text, choice, bool, numbers (a list of
            numbers written '512, 1024'), mapping (written 'bf16: 0.99, fp8: 0.98').
        unit: unit suffix shown after the value ('ms', 'GB/s', '' when unitless).
        optional: True when the field may be left empty (removed from the packet).
        gt, ge, lt, le: bounds from the schema (None when absent); for lists, per element.
        choices: allowed values of a choice field (for a mapping, the allowed keys).
        whole: True when the numbers of a list or mapping field are whole numbers.
        description: the schema's description, shown as help ('' when none).
    """

    path: Path_
    label: str
    kind: Kind
    unit: str = ""
    optional: bool = False
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    whole: bool = False
    description: str = ""

    @property
    def short_label(self) -> str:
        """The label without its section, for display under the section heading."""
        return ".".join(str(p) for p in self.path[2:])

    @property
    def section(self) -> str:
        """The top-level inputs section the field belongs to (workload, sla, ...)."""
        return str(self.path[1])

    def default_step(self, value: float | None) -> float:
        """The arrow-key step: 1 for integers, 0.01 on [0, 1], else a tenth of the value's
        decade (400 -> 10, 0.5 -> 0.01): fine enough to tune, coarse enough to move."""
        if self.kind == "integer":
            return 1
        if self.le is not None and self.le <= 1 and (self.ge == 0 or self.gt == 0):
            return 0.01
        magnitude = abs(value) if value else 1.0
        return 10.0 ** (math.floor(math.log10(magnitude)) - 1)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _peel(annotation: Any) -> tuple[Any, list[Any]]:
    """The bare type under Annotated layers and every metadata item found on the way."""
    metadata: list[Any] = []
    while get_origin(annotation) is typing.Annotated:
        base, *extra = get_args(annotation)
        for item in extra:
            metadata.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        annotation = base
    return annotation, metadata


def _bounds(metadata: list[Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    for item in metadata:
        for name, cls in (("gt", at.Gt), ("ge", at.Ge), ("lt", at.Lt), ("le", at.Le)):
            if isinstance(item, cls):
                found[name] = getattr(item, name)
    return found


def _unit(name: str) -> str:
    if name in UNIT_BY_NAME:
        return UNIT_BY_NAME[name]
    return next((unit for suffix, unit in UNIT_SUFFIXES if name.endswith(suffix)), "")


def _leaf(path: Path_, info: FieldInfo) -> FieldSpec:
    annotation, optional = _unwrap_optional(info.annotation)
    bare, metadata = _peel(annotation)
    metadata += list(info.metadata)
    name = str(path[-1])
    common = {
        "path": path,
        "label": ".".join(str(p) for p in path[1:]),
        "unit": _unit(name),
        "optional": optional or not info.is_required(),
        "description": info.description or "",
    }
    origin = get_origin(bare)
    if bare is bool:
        return FieldSpec(kind="bool", **common)
    if bare is int or bare is float:
        kind: Kind = "integer" if bare is int else "number"
        return FieldSpec(kind=kind, **common, **_bounds(metadata))
    if origin is Literal:
        return FieldSpec(kind="choice", choices=tuple(map(str, get_args(bare))), **common)
    if origin is list:
        element, element_meta = _peel(get_args(bare)[0])
        return FieldSpec(kind="numbers", whole=element is int, **common, **_bounds(element_meta))
    if origin is dict:
        key, value = (_peel(a) for a in get_args(bare))
        keys = tuple(map(str, get_args(key[0]))) if get_origin(key[0]) is Literal else ()
        whole = value[0] is int
        return FieldSpec(kind="mapping", choices=keys, whole=whole, **common, **_bounds(value[1]))
    return FieldSpec(kind="text", **common)


def field_spec(model: type[BaseModel], name: str, path: Path_) -> FieldSpec:
    """The FieldSpec of field `name` of `model`, found at `path` in a packet; e.g.
    `field_spec(BatchPolicy, "max_batch", ("baseline", "batch_policy", "max_batch"))`."""
    if name not in model.model_fields:
        raise KeyError(f"{model.__name__} has no field '{name}'")
    return _leaf(path, model.model_fields[name])


def _walk(model: type[BaseModel], path: Path_, optional: bool = False) -> list[FieldSpec]:
    """Leaves under `model`; every leaf of an optional section (e.g. workload.generation) is
    optional too (the section may be absent)."""
    specs: list[FieldSpec] = []
    for name, info in model.model_fields.items():
        annotation, maybe = _unwrap_optional(info.annotation)
        bare, _ = _peel(annotation)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            specs += _walk(bare, (*path, name), optional or maybe or not info.is_required())
        else:
            leaf = _leaf((*path, name), info)
            specs.append(replace(leaf, optional=True) if optional else leaf)
    return specs


def input_fields() -> list[FieldSpec]:
    """Every leaf of the packet's `inputs`, in schema order (the order a packet is written)."""
    return _walk(Inputs, ("inputs",))


def field_at(path: Path_) -> FieldSpec:
    """The FieldSpec at `path`; KeyError naming the path when there is none."""
    for spec in input_fields():
        if spec.path == path:
            return spec
    raise KeyError(f"no input field at {'.'.join(map(str, path))}")


def value_at(data: Any, path: Path_) -> Any:
    """The value at `path` in a packet (model or nested dicts/lists); None when absent."""
    for part in path:
        if data is None:
            return None
        if isinstance(data, BaseModel):
            data = getattr(data, str(part), None)
        elif isinstance(data, dict):
            data = data.get(part)
        else:
            data = data[part] if isinstance(part, int) and part < len(data) else None
    return data


def format_value(spec: FieldSpec, value: Any) -> str:
    """The text a field shows for `value` (parse_text reads it back to the same value)."""
    if value is None:
        return ""
    if spec.kind == "bool":
        return "true" if value else "false"
    if spec.kind == "numbers":
        return ", ".join(_number_text(v) for v in value)
    if spec.kind == "mapping":
        return ", ".join(f"{k}: {_number_text(v)}" for k, v in value.items())
    if spec.kind in ("integer", "number"):
        return _number_text(value)
    return str(value)


def _number_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


class TextRefused(ValueError):
    """Text that cannot become a value of the field; the message says why in one line."""


def check_bounds(spec: FieldSpec, value: float) -> None:
    """Raise TextRefused when `value` breaks the field's schema bounds."""
    if not math.isfinite(value):
        raise TextRefused(f"must be a finite number, got {value}")
    for bound, ok, words in (
        (spec.gt, lambda b: value > b, "greater than"),
        (spec.ge, lambda b: value >= b, "at least"),
        (spec.lt, lambda b: value < b, "less than"),
        (spec.le, lambda b: value <= b, "at most"),
    ):
        if bound is not None and not ok(bound):
            raise TextRefused(f"must be {words} {bound:g}, got {_number_text(value)}")


def _parse_number(spec: FieldSpec, text: str, integer: bool) -> int | float:
    try:
        value = parse_number(text.strip())
    except ValueError as exc:
        raise TextRefused(str(exc)) from None
    if integer and not isinstance(value, int):
        raise TextRefused(f"expected a whole number, got '{text.strip()}'")
    if not integer:
        value = float(value)
    check_bounds(spec, value)
    return value


def parse_text(spec: FieldSpec, text: str) -> Any:
    """The value `text` stands for in field `spec` (None = leave the field out).

    Raises TextRefused with a one-line reason. Bounds are checked here; rules spanning fields
    (p99 >= p95, weights summing to 1) are checked by `session.apply_edit`.
    """
    stripped = text.strip()
    if not stripped:
        if spec.optional:
            return None
        raise TextRefused("required: enter a value")
    if spec.kind in ("integer", "number"):
        return _parse_number(spec, stripped, spec.kind == "integer")
    if spec.kind == "bool":
        if stripped not in ("true", "false"):
            raise TextRefused(f"expected true or false, got '{stripped}'")
        return stripped == "true"
    if spec.kind == "choice":
        if stripped not in spec.choices:
            raise TextRefused(f"must be one of {', '.join(spec.choices)}; got '{stripped}'")
        return stripped
    if spec.kind == "numbers":
        return [_parse_number(spec, part, spec.whole) for part in _split(stripped)]
    if spec.kind == "mapping":
        return dict(_mapping_item(spec, part) for part in _split(stripped))
    return text


def _split(text: str) -> list[str]:
    parts = [p.strip() for p in text.strip().strip("[]{}").split(",")]
    if any(not p for p in parts):
        raise TextRefused("empty item: separate values with single commas")
    return parts


def _mapping_item(spec: FieldSpec, part: str) -> tuple[str, float]:
    key, colon, value = part.partition(":")
    if not colon:
        raise TextRefused(f"write key: value, got '{part}'")
    key = key.strip()
    if spec.choices and key not in spec.choices:
        raise TextRefused(f"unknown key '{key}': keys are {', '.join(spec.choices)}")
    return key, _parse_number(spec, value, spec.whole)
