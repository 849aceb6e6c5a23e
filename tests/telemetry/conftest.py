"""Shared fixtures: where the measured data lives, and small file writers."""

from __future__ import annotations

from pathlib import Path

import pytest

from model.compiler.measured import measured_dir


@pytest.fixture(scope="session")
def measured() -> Path:
    """The measured-data folder; missing data is a failure (FileNotFoundError), never a skip."""
    return measured_dir()


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
