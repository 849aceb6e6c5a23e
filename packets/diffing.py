"""What changed between two packet revisions, section by section (`workbench diff`).

Lists are matched by identity where they have one (candidates by name, owners and signatures by
role), so reordering is not reported as a change and a renamed candidate shows as removed+added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema import Packet

KEYED_LISTS = {("candidates",): "name", ("owners",): "role", ("signatures",): "role"}
SECTIONS = ("header", "owners", "inputs", "baseline", "candidates", "outputs", "signatures")


@dataclass(frozen=True)
class Change:
    """One changed leaf: `kind` is `added`, `removed` or `changed`; values are JSON-ready."""

    section: str
    path: str
    kind: str
    old: Any = None
    new: Any = None

    def __str__(self) -> str:
        mark = {"added": "+", "removed": "-", "changed": "~"}[self.kind]
        if self.kind == "added":
            return f"  {mark} {self.path}: {_short(self.new)}"
        if self.kind == "removed":
            return f"  {mark} {self.path}: {_short(self.old)}"
        return f"  {mark} {self.path}: {_short(self.old)} -> {_short(self.new)}"


def _short(value: Any) -> str:
    if isinstance(value, dict) and "role" in value and "principal" in value:
        return f"{value['role']} ({value['principal']})"
    if isinstance(value, dict) and "name" in value and "description" in value:
        value = value["description"]
    text = repr(value) if not isinstance(value, str) else value
    text = text.replace("\n", "\\n")
    return text if len(text) <= 70 else text[:67] + "..."


def _keyed(value: Any, path: tuple[str, ...]) -> Any:
    key = KEYED_LISTS.get(path)
    if key and isinstance(value, list):
        return {f"[{item.get(key)}]": item for item in value}
    return value


def _walk(
    old: Any, new: Any, path: tuple[str, ...], label: str, out: list[tuple[str, str, Any, Any]]
) -> None:
    old, new = _keyed(old, path), _keyed(new, path)
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            sub = f"{label}{key}" if key.startswith("[") else f"{label}.{key}" if label else key
            if key not in new:
                out.append((sub, "removed", old[key], None))
            elif key not in old:
                out.append((sub, "added", None, new[key]))
            else:
                _walk(old[key], new[key], (*path, key), sub, out)
    elif old != new:
        out.append((label, "changed", old, new))


def diff_packets(old: Packet, new: Packet) -> list[Change]:
    """Every leaf that differs, grouped in section order."""
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    found: list[tuple[str, str, Any, Any]] = []
    _walk(a, b, (), "", found)
    changes = []
    for path, kind, before, after in found:
        top = path.split(".")[0].split("[")[0]
        section = top if top in SECTIONS else "header"
        changes.append(Change(section, path, kind, before, after))
    return sorted(changes, key=lambda c: SECTIONS.index(c.section))
