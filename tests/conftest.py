"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from packets.examples import DEFAULT_EXAMPLE, example_bytes, example_names
from packets.load import LoadedPacket, parse_packet

REPO = Path(__file__).resolve().parents[1]

# `make test` must give the same verdict on every run (CI lands or refuses a change on it), so
# property tests draw a fixed sequence of examples by default. `HYPOTHESIS_PROFILE=explore`
# draws fresh random examples each run, to hunt for new counterexamples before a change lands
# (README "Tests"); a counterexample it finds becomes an @example on the test.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture(scope="session")
def default_example_bytes() -> bytes:
    return example_bytes(DEFAULT_EXAMPLE)


@pytest.fixture(scope="session")
def default_loaded(default_example_bytes: bytes) -> LoadedPacket:
    return parse_packet(default_example_bytes, f"{DEFAULT_EXAMPLE}.yaml")


@pytest.fixture(scope="session")
def all_examples() -> dict[str, bytes]:
    return {name: example_bytes(name) for name in example_names()}
