"""Shared fixtures: where the measured data lives, and small file writers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def measured_dir() -> Path:
    """shared/data/measured: beside the repository, or under $HANDOFF_SHARED_DIR."""
    shared = Path(os.environ.get("HANDOFF_SHARED_DIR", REPO.parent / "shared"))
    return shared / "data" / "measured"


@pytest.fixture(scope="session")
def measured() -> Path:
    """The measured-data folder; missing data is a failure, never a skip."""
    folder = measured_dir()
    assert (folder / "README.md").is_file(), (
        f"measured data not found at {folder}; set HANDOFF_SHARED_DIR to the shared folder"
    )
    return folder


@pytest.fixture
def write(tmp_path: Path):
    """write(name, text_or_bytes) -> path of a new file in a temporary folder."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
        return path

    return _write
