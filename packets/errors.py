"""Errors a user can see: one line each, naming the file, the line and the field.

`Problem` is one finding; `PacketError` carries every problem found in one file, so `workbench
check` can print them all at once. Nothing in `packets` raises anything else for bad input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .safe_text import printable


def dotted(path: Iterable[str | int]) -> str:
    """Render a path such as ('owners', 0, 'role') as `owners[0].role` (`<root>` when empty)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "<root>"


@dataclass(frozen=True)
class Problem:
    """One finding in a file: where it is and what is wrong with it.

    `line` is 1-based (0 when the file has no usable line, e.g. it is not valid UTF-8).
    `path` is the field's position in the document as keys and list indices.
    Its text form is one terminal-safe line (`safe_text.printable`), whatever the file name,
    keys or quoted values hold.
    """

    file: str
    line: int
    path: tuple[str | int, ...]
    message: str
    severity: str = "error"  # "error" blocks loading; "warning" is reported but allowed

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        tag = "" if self.severity == "error" else f"{self.severity}: "
        return printable(f"{where}: {dotted(self.path)}: {tag}{self.message}")


class PacketError(Exception):
    """A packet (or hardware file) that cannot be used, with every problem found in it."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = sorted(problems, key=lambda p: (p.line, dotted(p.path)))
        if not self.problems:
            raise ValueError("PacketError needs at least one problem")
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, file: str, line: int, path: tuple[str | int, ...], message: str) -> PacketError:
        """A PacketError holding one problem."""
        return cls([Problem(file, line, path, message)])


class UsageError(Exception):
    """The command cannot even start: a missing file, a directory, an unreadable path.

    Distinct from PacketError (the file was read and is wrong) so the command line can exit 2
    for usage errors and 1 for invalid packets.
    """


class TelemetryProblem(Exception):
    """Telemetry that cannot be used at all (exit 1, like an invalid packet)."""
