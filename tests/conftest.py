"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes, example_names
from packets.load import LoadedPacket, parse_packet

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_example_bytes() -> bytes:
    return example_bytes(DEFAULT_EXAMPLE)


@pytest.fixture(scope="session")
def default_loaded(default_example_bytes: bytes) -> LoadedPacket:
    return parse_packet(default_example_bytes, f"{DEFAULT_EXAMPLE}.yaml")


@pytest.fixture(scope="session")
def all_examples() -> dict[str, bytes]:
    return {name: example_bytes(name) for name in example_names()}
