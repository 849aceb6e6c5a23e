"""The example packets shipped as package data (`workbench examples`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .errors import UsageError

DEFAULT_EXAMPLE = "fusion-tiling-llama-decode"


def _folder() -> resources.abc.Traversable:
    return resources.files("packets") / "examples"


def example_names() -> list[str]:
    """Names of the shipped examples, sorted."""
    return sorted(
        p.name.removesuffix(".yaml") for p in _folder().iterdir() if p.name.endswith(".yaml")
    )


def example_bytes(name: str) -> bytes:
    """The example's file bytes exactly as shipped (comments included)."""
    if name not in example_names():
        raise UsageError(f"no example '{name}' (examples: {', '.join(example_names())})")
    return (_folder() / f"{name}.yaml").read_bytes()


def example_title(name: str) -> str:
    """The example's `title:` line, read without validating the whole packet."""
    for line in example_bytes(name).decode("utf-8").splitlines():
        if line.startswith("title:"):
            return line.removeprefix("title:").strip()
    return ""


def example_path(name: str) -> Path:
    """A filesystem path to the example (package data is installed as plain files)."""
    example_bytes(name)
    return Path(str(_folder() / f"{name}.yaml"))
