"""Canonical packet bytes: fixed key order, UTF-8, LF, floats that round-trip exactly.

`dump_packet(parse_packet(dump_packet(p)).packet) == dump_packet(p)` byte for byte, which
signatures rely on. Sections are written in schema order with defaults included (so a reader
sees every knob), free-form mappings in sorted key order, and `signatures` always last.
"""

from __future__ import annotations

from typing import Any

import yaml

from .schema import Packet

WIDTH = 100


class _CanonicalDumper(yaml.SafeDumper):
    """SafeDumper with literal blocks for multi-line text and no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if not value.replace("\n", "").isprintable():
        # Line separators (NEL, U+2028) and control characters: only escapes survive a re-read.
        style: str | None = '"'
    else:
        style = "|" if "\n" in value and _literal_ok(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _literal_ok(value: str) -> bool:
    """Literal blocks cannot carry trailing spaces on lines or carriage returns exactly."""
    return "\r" not in value and not any(line != line.rstrip(" \t") for line in value.split("\n"))


class FlowMap(dict):
    """A small mapping written on one line, e.g. a tile `{m: 128, n: 256, k: 64}`."""


def _represent_dict(dumper: yaml.SafeDumper, value: dict) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items())


def _represent_flow_map(dumper: yaml.SafeDumper, value: FlowMap) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=True)


def _represent_list(dumper: yaml.SafeDumper, value: list) -> yaml.SequenceNode:
    scalars = all(isinstance(v, int | float | bool) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=scalars or None)


def _represent_float(dumper: yaml.SafeDumper, value: float) -> yaml.ScalarNode:
    # repr is the shortest text that reads back as the same double; YAML 1.2 needs a '.' or 'e'.
    text = repr(value)
    if text in ("inf", "-inf", "nan"):
        text = {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}[text]
    else:
        mantissa, e, exponent = text.partition("e")
        if "." not in mantissa:  # PyYAML tags a float without '.' explicitly: keep it plain
            mantissa += ".0"
        text = mantissa + e + exponent
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


_CanonicalDumper.add_representer(str, _represent_str)
_CanonicalDumper.add_representer(dict, _represent_dict)
_CanonicalDumper.add_representer(FlowMap, _represent_flow_map)
_CanonicalDumper.add_representer(list, _represent_list)
_CanonicalDumper.add_representer(float, _represent_float)


def _ordered(value: Any, schema_ordered: bool) -> Any:
    """Sort free-form mapping keys; keep schema field order (model_dump already has it)."""
    if isinstance(value, dict):
        items = value.items() if schema_ordered else sorted(value.items())
        return {k: _ordered(v, schema_ordered) for k, v in items}
    if isinstance(value, list):
        return [_ordered(v, schema_ordered) for v in value]
    return value


def _plain_data(packet: Packet) -> dict[str, Any]:
    data = packet.model_dump(mode="python", exclude_none=True)
    # Free-form output sections and user mappings (tiles, peak_tflops, measured) are sorted.
    for key in ("outputs",):
        data[key] = _ordered(data[key], schema_ordered=False)
    for config in (data["baseline"], *data["candidates"]):
        if "tiles" in config:
            config["tiles"] = {
                op: FlowMap(tile) if isinstance(tile, dict) else tile
                for op, tile in sorted(config["tiles"].items())
            }
    quality = data["inputs"]["precision"]["quality"]
    quality["measured"] = dict(sorted(quality["measured"].items()))
    hardware = data["inputs"]["hardware"]
    if "peak_tflops" in hardware:
        hardware["peak_tflops"] = dict(sorted(hardware["peak_tflops"].items()))
    return data


def dump_yaml(data: Any) -> bytes:
    """Deterministic YAML bytes for plain data (dicts keep their order)."""
    text = yaml.dump(
        data,
        Dumper=_CanonicalDumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=WIDTH,
        indent=2,
        line_break="\n",
    )
    return text.encode("utf-8")


def dump_packet(packet: Packet) -> bytes:
    """The canonical bytes of `packet`; `signatures` is always the last top-level key."""
    data = _plain_data(packet)
    signatures = data.pop("signatures")
    body = dump_yaml(data)
    tail = dump_yaml({"signatures": signatures})
    return body + tail
