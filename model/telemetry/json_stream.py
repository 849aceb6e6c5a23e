"""Streaming the items of one JSON array out of a large file, with bounds checked by line.

The file (plain or gzip) is read in `READ_CHUNK` pieces, each cut just after the last byte that
ends a token outside a string (`, : [ ] { }` or whitespace), so no token is split between
pieces. Before a piece reaches the parser (ijson's yajl2 C backend) numpy checks it, and any
failure names its 1-based line:

- NUL bytes and text that is not UTF-8;
- nesting deeper than `MAX_DEPTH` (ijson's C backend recurses: ~10,000 levels took 260 MB and
  100,000 crashed the process when tried here);
- a number with more than `MAX_NUMBER_DIGITS` digits in a row (ijson 3.6's C backend segfaults
  on integers over 4,300 digits; integers outside int64 it refuses as "integer overflow");
- a single token longer than `MAX_TOKEN_BYTES`.

Bare `NaN`, `Infinity` and `-Infinity` (not JSON, but Python's json writes them) become the
strings "NaN", "Infinity", "-Infinity", which `number` reads back as floats. Parser errors are
reported with the parser's first line only (later lines quote the file) and located by
re-reading the file up to the failing piece and feeding that piece line by line.
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import ijson
import numpy as np

from model.telemetry.bounded import READ_CHUNK, open_regular, too_big
from model.telemetry.errors import TelemetryError

MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted; a trace event is ~4 deep (`Input Dims` lists)."""

MAX_NUMBER_DIGITS = 20
"""Longest run of digits in a number: int64 has 19 digits, a double 17 significant digits."""

MAX_TOKEN_BYTES = 16 * 2**20
"""Longest single token (a string, usually): no kernel or op name comes near it."""

NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""What the bare non-JSON literals are rewritten to (as strings) and read back as."""

_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1
_ENDS_TOKEN = np.zeros(256, bool)
_ENDS_TOKEN[[ord(c) for c in ",:[]{} \t\r\n"]] = True
_DIGIT = np.zeros(256, bool)
_DIGIT[ord("0") : ord("9") + 1] = True
_BARE = np.zeros(256, bool)
_BARE[[ord("N"), ord("I")]] = True


@dataclass
class _ScanState:
    """What carries from one piece to the next: nesting depth, bytes and lines before it."""

    depth: int = 0
    offset: int = 0
    line: int = 1


def _outside_strings(buf: np.ndarray) -> np.ndarray:
    """(bytes,) bool: True outside JSON strings, quotes included as inside. The piece starts
    outside a string; a quote preceded by an odd run of backslashes is escaped."""
    quotes = np.flatnonzero(buf == 34)
    if quotes.size == 0:
        return np.ones(len(buf), bool)
    slashes = np.flatnonzero(buf == 92)
    if slashes.size:
        # Run of backslashes ending just before each quote: its length's parity decides.
        before = quotes - 1
        idx = np.searchsorted(slashes, before)
        hit = (idx < slashes.size) & (slashes[np.minimum(idx, slashes.size - 1)] == before)
        run_start = np.flatnonzero(np.diff(slashes, prepend=-2) != 1)
        run_of = np.searchsorted(run_start, np.minimum(idx, slashes.size - 1), side="right") - 1
        length = before - slashes[run_start[np.maximum(run_of, 0)]] + 1
        quotes = quotes[~(hit & (length % 2 == 1))]
    edges = np.zeros(len(buf) + 1, np.int8)
    edges[quotes[0::2]] += 1
    edges[quotes[1::2] + 1] -= 1
    return np.cumsum(edges[:-1], dtype=np.int8) == 0


def _line_at(piece: bytes, state: _ScanState, index: int) -> int:
    return state.line + piece.count(b"\n", 0, index)


def _check_piece(name: str, piece: bytes, buf: np.ndarray, outside: np.ndarray, state: _ScanState):
    """Raise for NUL, bad UTF-8, nesting or digit runs over the caps; return the depth after."""
    nul = piece.find(b"\x00")
    if nul >= 0:
        at = _line_at(piece, state, nul)
        raise TelemetryError(
            name, f"NUL byte at offset {state.offset + nul}: not JSON text", line=at
        )
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        at, byte = _line_at(piece, state, exc.start), piece[exc.start]
        raise TelemetryError(
            name,
            f"not UTF-8 text (byte 0x{byte:02x} at offset {state.offset + exc.start})",
            line=at,
        ) from None
    brackets = np.flatnonzero((_OPEN[buf] != 0) & outside)
    depth = state.depth
    if brackets.size:
        levels = depth + np.cumsum(_OPEN[buf[brackets]], dtype=np.int64)
        deep = np.flatnonzero(levels > MAX_DEPTH)
        if deep.size:
            at = _line_at(piece, state, int(brackets[deep[0]]))
            raise TelemetryError(name, f"JSON nested deeper than {MAX_DEPTH} levels", line=at)
        depth = int(levels[-1])
    digits = np.flatnonzero(_DIGIT[buf] & outside)
    if digits.size > MAX_NUMBER_DIGITS:
        starts = np.flatnonzero(np.diff(digits, prepend=-2) != 1)
        lengths = np.diff(starts, append=digits.size)
        long = np.flatnonzero(lengths > MAX_NUMBER_DIGITS)
        if long.size:
            at = _line_at(piece, state, int(digits[starts[long[0]]]))
            raise TelemetryError(
                name, f"number with more than {MAX_NUMBER_DIGITS} digits (refused)", line=at
            )
    return depth


def _quote_bare(piece: bytes, buf: np.ndarray, outside: np.ndarray) -> bytes:
    """`NaN`/`Infinity`/`-Infinity` outside strings -> quoted strings (parsers refuse them)."""
    spots = np.flatnonzero(_BARE[buf] & outside)
    if spots.size == 0:
        return piece
    out, last = [], 0
    for at in spots.tolist():  # rare: only files Python's json wrote with non-finite floats
        token = next((t for t in (b"NaN", b"Infinity") if piece.startswith(t, at)), None)
        if token is None:
            continue  # not a literal we know: the parser reports it
        start = at - 1 if at and piece[at - 1 : at] == b"-" else at
        out += [piece[last:start], b'"', piece[start : at + len(token)], b'"']
        last = at + len(token)
    out.append(piece[last:])
    return b"".join(out)


def _chunks(name: str, handle: BinaryIO, max_bytes: int, chunk_bytes: int) -> Iterator[bytes]:
    """Decompressed bytes (gzip by magic), refused past `max_bytes` in all."""
    zipped = handle.read(2) == b"\x1f\x8b"
    handle.seek(0)
    source = gzip.GzipFile(fileobj=handle, mode="rb") if zipped else handle
    total = 0
    try:
        while chunk := source.read(chunk_bytes):
            total += len(chunk)
            if total > max_bytes:
                what = "decompressed trace" if zipped else "trace"
                raise too_big(name, what, max_bytes)
            yield chunk
    except (OSError, EOFError, zlib.error) as exc:
        what = "not a readable gzip file" if zipped else "cannot read"
        detail = " (truncated)" if isinstance(exc, EOFError) else ""
        raise TelemetryError(name, f"{what}{detail}") from None


@dataclass(frozen=True)
class Piece:
    """Checked bytes ready for the parser, and the line and nesting depth they start at."""

    data: bytes
    line: int
    depth_after: int


def pieces(name: str, max_bytes: int, chunk_bytes: int = READ_CHUNK) -> Iterator[Piece]:
    """The file's bytes as checked pieces, each ending where a token ends (module docstring),
    read `chunk_bytes` at a time."""
    state = _ScanState()
    carry = b""
    first = True
    with open_regular(name, max_bytes, "trace") as handle:
        for chunk in _chunks(name, handle, max_bytes, chunk_bytes):
            data = carry + chunk
            if first:
                data, first = data.removeprefix(b"\xef\xbb\xbf"), False
            buf = np.frombuffer(data, np.uint8)
            outside = _outside_strings(buf)
            ends = np.flatnonzero(_ENDS_TOKEN[buf] & outside)
            if ends.size == 0:
                if len(data) > MAX_TOKEN_BYTES:
                    raise TelemetryError(
                        name, f"a single JSON token over {MAX_TOKEN_BYTES >> 20} MiB",
                        line=state.line,
                    )  # fmt: skip
                carry = data
                continue
            cut = int(ends[-1]) + 1
            yield _checked(name, data[:cut], buf[:cut], outside[:cut], state)
            carry = data[cut:]
        if carry:
            buf = np.frombuffer(carry, np.uint8)
            yield _checked(name, carry, buf, _outside_strings(buf), state)


def _checked(name: str, data: bytes, buf: np.ndarray, outside: np.ndarray, state: _ScanState):
    line = state.line
    state.depth = _check_piece(name, data, buf, outside, state)
    state.offset += len(data)
    state.line += data.count(b"\n")
    return Piece(_quote_bare(data, buf, outside), line, state.depth)


def parser_message(exc: Exception) -> str:
    """The parser's complaint without the file excerpt yajl appends on later lines."""
    text = str(exc).removeprefix("b'").removeprefix('b"')
    first = text.replace("\\n", "\n").split("\n", 1)[0].strip()
    return first or "invalid JSON"


def number(value: object) -> float | None:
    """A JSON number (or a rewritten NaN/Infinity) as float, None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return NONFINITE.get(value)
    return None


def stream_items(
    name: str,
    prefix: str,
    max_bytes: int,
    consume: Callable[[list], None],
    *,
    allow_open_array: bool = False,
) -> tuple[str, ...]:
    """Parse the file, passing the items under ijson `prefix` to `consume` in batches (a list it
    must not keep). With `allow_open_array`, a top-level array missing its closing `]` is
    accepted (the trace-event format allows it). Returns warnings.

    Raises:
        TelemetryError: the bounds of the module docstring, or invalid JSON (with its line).
    """
    batch = ijson.sendable_list()
    coro = ijson.items_coro(batch, prefix, use_float=True)
    depth, last_line = 0, 0
    for index, piece in enumerate(pieces(name, max_bytes)):
        try:
            coro.send(piece.data)
        except ijson.JSONError as exc:
            raise TelemetryError(
                name, f"invalid JSON: {parser_message(exc)}", line=_error_line(name, max_bytes,
                                                                               prefix, index)
            ) from None  # fmt: skip
        if batch:
            consume(batch)
            del batch[:]
        depth = piece.depth_after
        last_line = piece.line + piece.data.count(b"\n")
    try:
        coro.close()
    except ijson.JSONError as exc:
        if allow_open_array and depth == 1 and "premature EOF" in str(exc):
            return (f"{name}: array without closing ']' (allowed)",)
        message = f"invalid JSON: {parser_message(exc)}"
        if depth > 0:
            message += f" ({depth} brackets left open: truncated?)"
        raise TelemetryError(name, message, line=last_line) from None
    if batch:
        consume(batch)
    return ()


def _error_line(name: str, max_bytes: int, prefix: str, failing: int) -> int:
    """The line where the parser fails: parse again, the failing piece one line at a time."""
    coro = ijson.items_coro(ijson.sendable_list(), prefix, use_float=True)
    for index, piece in enumerate(pieces(name, max_bytes)):
        if index < failing:
            coro.send(piece.data)
            continue
        for number_, line in enumerate(piece.data.splitlines(keepends=True)):
            try:
                coro.send(line)
            except ijson.JSONError:
                return piece.line + number_
        return piece.line + piece.data.count(b"\n")
    return 0


def top_level_keys(name: str, max_bytes: int, limit: int = 6) -> tuple[list[str], bool]:
    """The first keys of a top-level object and whether one of them is `traceEvents` holding an
    array (for the error when no events were found; only run then)."""
    keys: list[str] = []
    events = ijson.sendable_list()
    coro = ijson.parse_coro(events)
    found = False
    for piece in pieces(name, max_bytes):
        coro.send(piece.data)
        for prefix, event, value in events:
            if prefix == "" and event == "map_key" and len(keys) < limit:
                keys.append(value)
            if prefix == "traceEvents" and event == "start_array":
                found = True
        del events[:]
        if found:
            break
    return keys, found


__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_DIGITS",
    "MAX_TOKEN_BYTES",
    "NONFINITE",
    "Piece",
    "number",
    "parser_message",
    "pieces",
    "stream_items",
    "top_level_keys",
]
