"""Keymap files: usable entries applied, anything wrong reported in one line, never raised."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.core.keymap import config_home, keymap_path, load_keymap

IDS = ["next-step", "help", "save"]


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "keymap.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_location_follows_xdg_config_home() -> None:
    assert config_home({"XDG_CONFIG_HOME": "/c", "HOME": "/h"}) == Path("/c")
    assert config_home({"HOME": "/h"}) == Path("/h/.config")
    assert keymap_path({"HOME": "/h"}) == Path("/h/.config/handoff-workbench/keymap.toml")


def test_missing_file_is_no_keymap_and_no_warning(tmp_path: Path) -> None:
    loaded = load_keymap(tmp_path / "absent.toml", IDS)
    assert loaded.keymap == {} and loaded.warning == ""


def test_valid_entries_are_normalised(tmp_path: Path) -> None:
    loaded = load_keymap(write(tmp_path, 'next-step = "f8"\nhelp = "f1, f2"\n'), IDS)
    assert loaded.keymap == {"next-step": "f8", "help": "f1,f2"}
    assert loaded.warning == ""


@pytest.mark.parametrize(
    ("text", "kept", "words"),
    [
        ('next-step = "f8"\nnope = "f9"\n', {"next-step": "f8"}, "unknown binding id 'nope'"),
        ("save = 5\n", {}, "save: expected a key name in quotes"),
        ('save = "ctrl s"\n', {}, "'ctrl s' is not a key name"),
        ('next-step = "f8"\nhelp = [', {}, "not valid TOML"),
        (b"\xff\xfe", {}, "cannot read keymap"),
    ],
)
def test_bad_entries_give_one_line_naming_the_file(
    tmp_path: Path, text: str | bytes, kept: dict[str, str], words: str
) -> None:
    path = write(tmp_path, text)
    loaded = load_keymap(path, IDS)
    assert loaded.keymap == kept
    assert words in loaded.warning
    assert loaded.warning.startswith(str(path))
    assert "\n" not in loaded.warning


def test_a_keymap_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO (or /dev/zero) named as the keymap would hang or fill memory at start-up."""
    fifo = tmp_path / "keymap.toml"
    os.mkfifo(fifo)
    loaded = load_keymap(fifo, ["quit"])
    assert loaded.keymap == {}
    assert "not a regular file" in loaded.warning or "FIFO" in loaded.warning
    assert "using default keys" in loaded.warning
