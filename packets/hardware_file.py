"""Hardware envelopes from packets and hardware YAML files, with the same clear errors as packets.

A hardware file (`format: handoff-hardware/1`) names a `preset` to start from (optional) and
overrides any envelope field; without a preset it must give the required fields and the rest
are derived (model/compiler/hardware.py `HardwareEnvelope.from_fields`). `workbench telemetry
calibrate` writes these files; a packet references one with `inputs.hardware.file`.

Beside a calibrated file `X.yaml`, `calibrate -o` writes its error bands to `X.yaml.bands.json`
(`bands_path`): the 10-90% bands of the calibration's training residuals with the SHA-256 of the
hardware file they belong to, so `telemetry compare --hardware X.yaml` uses them without
`--bands`, and a hardware file edited since is not given bands fitted to other figures
(`bands_beside`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError, create_model

from model.compiler.hardware import HardwareEnvelope, preset

from .dump import dump_yaml
from .errors import PacketError, Problem, UsageError
from .fields import Text, choice
from .files import HARDWARE, FileKind, read_file_bytes, sanitized_token
from .messages import problems_from_validation
from .schema import ENVELOPE_FIELDS, Strict, envelope_overrides
from .strict_yaml import LoadedYaml, load_yaml

if TYPE_CHECKING:  # polars: only the bands' readers pay for it, not every packet check
    from model.compiler.regimes import ErrorBands

HARDWARE_FORMAT = "handoff-hardware/1"

BANDS_SUFFIX = ".bands.json"
BANDS = FileKind("error-bands file", HARDWARE.cap_bytes)  # ~40 cells of five numbers: ~5 KiB

HardwareFile = create_model(
    "HardwareFile",
    __base__=Strict,
    __doc__="A hardware envelope file: a base preset (optional) and field overrides.",
    format=(choice(HARDWARE_FORMAT), ...),
    name=(Text, ...),
    preset=(Text | None, None),
    source=(Text | None, Field(default=None, description="Where the figures come from.")),
    **ENVELOPE_FIELDS,
)

_FIELD_IN_MESSAGE = re.compile(r"^(?:hardware(?:\.preset)?\.)?([a-z_]+)\b")


def envelope_from(
    name: str, base: str | None, overrides: dict[str, Any], source: str | None = None
) -> HardwareEnvelope:
    """A preset with overrides, or an envelope built from fields alone (ValueError if bad)."""
    if base is not None:
        envelope = preset(base, **overrides)
        if name != base:
            envelope = envelope.with_overrides(name=name)
    else:
        envelope = HardwareEnvelope.from_fields(name=name, **overrides)
    return envelope.with_overrides(source=source) if source else envelope


def _problem(exc: ValueError, file: str, loaded: LoadedYaml | None, base: tuple) -> Problem:
    """Locate a model ValueError ('hardware.hbm_gbs must be ...') at its field."""
    message = str(exc)
    match = _FIELD_IN_MESSAGE.match(message.removeprefix("hardware: "))
    known = {f.name for f in fields(HardwareEnvelope)} | {"preset"}
    path = base
    if match and match.group(1) in known:
        path = (*base, match.group(1))
        if "preset" in message.split(":")[0]:
            path = (*base, "preset")
    line = loaded.line_of(path) if loaded else 0
    return Problem(file, line, path, message)


def load_hardware_file(path: Path) -> HardwareEnvelope:
    """Read and validate a hardware file (UsageError if unreadable, PacketError if invalid)."""
    raw = read_file_bytes(path, HARDWARE)
    name = str(path)
    loaded = load_yaml(raw, name)
    data = loaded.data
    if not isinstance(data, dict):
        raise PacketError.single(name, 1, (), "a hardware file is a YAML mapping of fields")
    if data.get("format") != HARDWARE_FORMAT:
        raise PacketError.single(
            name,
            loaded.line_of(("format",)),
            ("format",),
            f"expected format {HARDWARE_FORMAT}, got {sanitized_token(data.get('format'))}",
        )
    try:
        spec = HardwareFile.model_validate(data)
    except ValidationError as exc:
        raise PacketError(problems_from_validation(HardwareFile, exc, loaded, name)) from None
    try:
        return envelope_from(spec.name, spec.preset, envelope_overrides(spec), spec.source)
    except ValueError as exc:
        raise PacketError([_problem(exc, name, loaded, ())]) from None


def resolve_hardware(
    section: Any, base_dir: Path | None, file: str = "<packet>", loaded: LoadedYaml | None = None
) -> HardwareEnvelope:
    """The envelope a packet's `inputs.hardware` section describes (PacketError if invalid)."""
    where = ("inputs", "hardware")
    overrides = envelope_overrides(section)
    try:
        if section.file is not None:
            target = Path(section.file)
            if not target.is_absolute() and base_dir is not None:
                target = base_dir / target
            try:
                envelope = load_hardware_file(target)
            except UsageError as exc:  # missing, not a regular file: an error at the field
                path = (*where, "file")
                line = loaded.line_of(path) if loaded else 0
                message = f"{exc} (paths are relative to the packet)"
                raise PacketError([Problem(file, line, path, message)]) from None
            envelope = envelope.with_overrides(**overrides) if overrides else envelope
            return envelope.with_overrides(source=section.source) if section.source else envelope
        name = section.preset or "custom"
        return envelope_from(name, section.preset, overrides, section.source)
    except ValueError as exc:
        raise PacketError([_problem(exc, file, loaded, where)]) from None


def dump_hardware(envelope: HardwareEnvelope, base: str | None = None) -> bytes:
    """A hardware file for `envelope`: every field written out (so it stands alone)."""
    data: dict[str, Any] = {"format": HARDWARE_FORMAT, "name": envelope.name}
    if base is not None:
        data["preset"] = base
    if envelope.source:
        data["source"] = envelope.source
    for name in ENVELOPE_FIELDS:
        value = getattr(envelope, name)
        if value is None or value == "":  # unset: the envelope's own default applies
            continue
        data[name] = dict(sorted(value.items())) if name == "peak_tflops" else value
    return dump_yaml(data)


def bands_path(hardware_path: Path) -> Path:
    """Where the error bands of the hardware file `hardware_path` live: `NAME.bands.json`."""
    return hardware_path.with_name(hardware_path.name + BANDS_SUFFIX)


def dump_bands(bands: ErrorBands, hardware_bytes: bytes) -> bytes:
    """The bands file for the hardware file `hardware_bytes`: the bands (`ErrorBands.as_dict`)
    and `hardware_sha256`, the digest of the file they were calibrated with."""
    data = {**bands.as_dict(), "hardware_sha256": hashlib.sha256(hardware_bytes).hexdigest()}
    return (json.dumps(data, indent=2, allow_nan=False) + "\n").encode()


def bands_beside(hardware_path: Path) -> tuple[ErrorBands | None, str | None]:
    """The bands written beside a hardware file by `calibrate -o`: (bands, None); (None, None)
    when there are none; (None, why) when the bands file is unusable or belongs to another
    version of the hardware file (a one-line reason naming the bands file, for a note)."""
    target = bands_path(hardware_path)
    if not target.is_file():
        return None, None
    try:
        raw = read_file_bytes(target, BANDS)
        data = json.loads(raw)
        from model.compiler.regimes import parse_bands

        bands = parse_bands(data)
    except (UsageError, ValueError, UnicodeDecodeError) as exc:
        reason = "not JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
        return None, f"{target}: {reason}; using the shipped A100 bands"
    digest = hashlib.sha256(read_file_bytes(hardware_path, HARDWARE)).hexdigest()
    if data.get("hardware_sha256") != digest:
        return None, (
            f"{target}: calibrated with another version of {hardware_path.name} (its digest "
            "differs); using the shipped A100 bands"
        )
    return bands, None
