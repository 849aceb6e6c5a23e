"""A packet taken through propose -> validate (quick) -> recommend, shared by the review tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.examples import example_bytes
from tests.signing.conftest import keys  # noqa: F401 (session-scoped ssh-keygen keys)
from workbench.cli import main

MAPPING = "mapping-dynamic-shapes"


def prepared_copy(
    folder: Path, name: str = MAPPING, edits: tuple[tuple[bytes, bytes], ...] = ()
) -> Path:
    """The example with 4,000 requests (fast), plus byte edits."""
    raw = example_bytes(name).replace(b"requests: 20000", b"requests: 4000")
    for old, new in edits:
        assert old in raw, old
        raw = raw.replace(old, new, 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_bytes(raw)
    return path


def take_through(path: Path, candidate: str, *extra_validate: str) -> Path:
    assert main(["propose", str(path), "--candidate", candidate, "--rationale",
                 "Compile the missing bucket so long prompts stop falling back."]) == 0  # fmt: skip
    assert main(["validate", str(path), "--quick", *extra_validate]) == 0
    assert main(["recommend", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def proposed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mapping example after propose/validate/recommend for add-4096-bucket."""
    folder = tmp_path_factory.mktemp("review")
    return take_through(prepared_copy(folder), "add-4096-bucket")
