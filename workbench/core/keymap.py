"""User key remapping: `$XDG_CONFIG_HOME/handoff-workbench/keymap.toml`, binding id -> key.

Textual-free. The file is a TOML table of binding ids (listed on the help screen, `?`) mapped
to Textual key names; several keys are written comma-separated:

    next-step = "ctrl+j"
    help = "f1,f2"

A file that cannot be used never stops the app: `load_keymap` returns the usable entries and a
one-line warning naming the file, the line when known, and what is wrong.
"""

from __future__ import annotations

import errno
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packets.files import FileKind, FileRefused, KiB, read_regular
from workbench.core.drafts import APP_DIR

KEYMAP = FileKind("keymap", 64 * KiB)  # one line per binding: a few KiB at most

# A Textual key name: letters, digits, '+' and '_' (e.g. ctrl+shift+up, f5, question_mark).
_KEY_RE = re.compile(r"[A-Za-z0-9_+\-]+\Z")


def config_home(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME`, or `~/.config` when unset or not absolute (XDG base dirs)."""
    env = os.environ if environ is None else environ
    value = env.get("XDG_CONFIG_HOME", "")
    if value and Path(value).is_absolute():
        return Path(value)
    return Path(env.get("HOME") or Path.home()) / ".config"


def keymap_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the keymap file is looked for."""
    return config_home(environ) / APP_DIR / "keymap.toml"


@dataclass(frozen=True)
class KeymapLoad:
    """The result of reading a keymap file.

    Attributes:
        keymap: binding id -> key string(s), only the entries that can be applied.
        warning: one line saying what was wrong ('' when the file was fine or absent).
    """

    keymap: dict[str, str] = field(default_factory=dict)
    warning: str = ""


def load_keymap(path: Path, known_ids: Iterable[str]) -> KeymapLoad:
    """Read the keymap at `path` (absent: empty); entries with unknown ids or bad keys are left
    out and named in the warning."""
    try:
        text = read_regular(path, KEYMAP).decode("utf-8")
    except FileRefused as exc:
        if exc.error_number == errno.ENOENT:
            return KeymapLoad()
        return KeymapLoad(warning=f"{path}: cannot read keymap ({exc.reason}); using default keys")
    except UnicodeDecodeError:
        return KeymapLoad(
            warning=f"{path}: cannot read keymap (not UTF-8 text); using default keys"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return KeymapLoad(warning=f"{path}: not valid TOML ({exc}); using default keys")
    known = set(known_ids)
    keymap: dict[str, str] = {}
    bad: list[str] = []
    for binding_id, keys in data.items():
        if binding_id not in known:
            bad.append(f"unknown binding id '{binding_id}'")
        elif not isinstance(keys, str) or not keys.strip():
            bad.append(f"{binding_id}: expected a key name in quotes")
        elif not all(_KEY_RE.match(k.strip()) for k in keys.split(",")):
            bad.append(f"{binding_id}: '{keys}' is not a key name (e.g. ctrl+n, f5)")
        else:
            keymap[binding_id] = ",".join(k.strip() for k in keys.split(","))
    warning = ""
    if bad:
        warning = f"{path}: ignored {'; '.join(bad)} (ids are listed on the help screen)"
    return KeymapLoad(keymap, warning)
