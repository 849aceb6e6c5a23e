"""Strict YAML reading for packets: one document, no aliases, no duplicate keys, no YAML 1.1 guesses.

PyYAML alone silently keeps the last of duplicate keys, expands a few hundred bytes of aliases
into 10^8 nodes, and reads `no` as False, `010` as 8 and `12:30` as 750. This module composes the
node tree itself and leaves every plain scalar as `Plain` text: the schema decides what it means
(a number field parses it by YAML 1.2 core rules, a text field keeps the characters exactly as
written). Every value's line is recorded so errors can say where they are.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from .errors import PacketError, Problem
from .safe_text import describe_char, first_unsafe, printable

MAX_BYTES = 1024 * 1024  # 1 MiB: the largest real packet is a few tens of KiB
MAX_DEPTH = 32  # nesting levels; the packet schema needs fewer than 10
MAX_TAG_SHOWN = 60  # characters of a refused tag quoted in its error
MAX_INT_DIGITS = 40  # no field takes a whole number this long (seeds are < 2^63: 19 digits)

# YAML 1.2 breaks lines at LF, CR, CRLF, NEL, LS and PS (spec 5.4); a reader or reviewer that
# splits on LF alone sees one line where YAML sees several (a '# comment' can carry a whole
# section after a lone CR). Packets use LF, or CRLF pairs, only.
_OTHER_BREAKS = re.compile("\r(?!\n)|[\x85\u2028\u2029]")
_BREAK_NAMES = {"\r": "a CR not followed by LF", "\x85": "NEL", "\u2028": "LS", "\u2029": "PS"}

PLAIN_TAG = "tag:handoff-workbench:plain"
STR_TAG = "tag:yaml.org,2002:str"
NULL_WORDS = frozenset({"", "~", "null", "Null", "NULL"})
TRUE_WORDS = frozenset({"true", "True", "TRUE"})
FALSE_WORDS = frozenset({"false", "False", "FALSE"})
YAML11_BOOL_WORDS = frozenset(
    w for base in ("yes", "no", "on", "off", "y", "n") for w in (base, base.title(), base.upper())
)
_INT_RE = re.compile(r"[-+]?[0-9]+\Z")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]+\Z")
_OCT_RE = re.compile(r"0o[0-7]+\Z")
_FLOAT_RE = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_SPECIAL_FLOATS = {
    ".inf": math.inf,
    ".Inf": math.inf,
    ".INF": math.inf,
    "+.inf": math.inf,
    "+.Inf": math.inf,
    "+.INF": math.inf,
    "-.inf": -math.inf,
    "-.Inf": -math.inf,
    "-.INF": -math.inf,
    ".nan": math.nan,
    ".NaN": math.nan,
    ".NAN": math.nan,
}


class Plain(str):
    """A plain (unquoted) YAML scalar, kept as the exact text written.

    Schema types turn it into a number or boolean by YAML 1.2 core rules; text fields keep it
    as written, so `firmware: 1.10` stays "1.10" and `title: no` stays "no".
    """

    __slots__ = ()


def parse_number(text: str) -> int | float:
    """Read a plain scalar as a YAML 1.2 core-schema number, or raise ValueError saying why.

    Leading zeros are refused: YAML 1.1 reads `010` as octal 8, YAML 1.2 as 10, and a packet
    must not depend on which one a reader implements.
    """
    if _INT_RE.match(text):
        digits = text.lstrip("+-")
        if len(digits) > MAX_INT_DIGITS:
            raise ValueError(f"a {len(digits)}-digit number is beyond the range of every field")
        if len(digits) > 1 and digits.startswith("0"):
            raise ValueError(
                f"'{text}' has a leading zero (YAML 1.1 reads it as octal): write {int(text)}"
            )
        return int(text)
    if _HEX_RE.match(text) or _OCT_RE.match(text):
        if len(text) - 2 > MAX_INT_DIGITS:
            raise ValueError(f"a {len(text) - 2}-digit number is beyond the range of every field")
        return int(text[2:], 16 if text[1] == "x" else 8)
    if _FLOAT_RE.match(text):
        return float(text)
    if text in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[text]
    raise ValueError(f"expected a number, got '{text}'")


def parse_bool(text: str) -> bool:
    """Read a plain scalar as a YAML 1.2 boolean (true/false only), or raise ValueError."""
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    if text in YAML11_BOOL_WORDS:
        raise ValueError(f"'{text}' is a YAML 1.1 boolean: write true or false")
    raise ValueError(f"expected true or false, got '{text}'")


@dataclass
class LoadedYaml:
    """A loaded document: the data (dicts, lists, str, Plain, None) and each value's line."""

    data: Any
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)

    def line_of(self, path: tuple[str | int, ...]) -> int:
        """Line of the value at `path`, or of its nearest ancestor that exists (1-based)."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line:
                return line
        return 1


class _Resolver(BaseResolver):
    """Resolves nothing implicitly: plain scalars get PLAIN_TAG, quoted ones STR_TAG."""

    def resolve(self, kind, value, implicit):
        if kind is ScalarNode:
            return PLAIN_TAG if implicit[0] else STR_TAG
        return super().resolve(kind, value, implicit)


class _Loader(Reader, Scanner, Parser, Composer, SafeConstructor, _Resolver):
    """PyYAML's pure-Python loader with aliases refused and nesting depth capped."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        _Resolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.peek_event()
            raise _Refused(
                event.start_mark.line + 1,
                "YAML aliases (*name) are not accepted in packets: write the value out",
            )
        event = self.peek_event()
        if getattr(event, "anchor", None) is not None:
            raise _Refused(
                event.start_mark.line + 1,
                f"YAML anchors (&{event.anchor}) are not accepted in packets: write values out",
            )
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _Refused(event.start_mark.line + 1, f"nesting deeper than {MAX_DEPTH} levels")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        tag = getattr(event, "tag", None)
        if tag is not None:  # written in the file (`!!seq`, `!x`, `!`), not resolved by us
            node.explicit_tag = tag
        return node


class _Refused(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _decode(raw: bytes, name: str) -> str:
    if len(raw) > MAX_BYTES:
        raise PacketError.single(
            name,
            0,
            (),
            f"file is {len(raw) / 1048576:.1f} MiB; packet and hardware files are capped at "
            f"{MAX_BYTES // 1048576} MiB",
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PacketError.single(
            name, line, (), f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise PacketError.single(name, line, (), "contains a NUL character: not a text file")
    if not text.strip():
        raise PacketError.single(name, 1, (), "file is empty")
    _refuse_raw_characters(text, name)
    return text


def _line_at(text: str, index: int) -> int:
    """1-based line of `text[index]`, counting LF line ends (the only ones a packet has)."""
    return text.count("\n", 0, index) + 1


def _refuse_raw_characters(text: str, name: str) -> None:
    """Refuse line breaks other than LF/CRLF and unsafe characters anywhere in the file,
    comments included (a bidi override in a comment reorders what a reviewer sees)."""
    brk = _OTHER_BREAKS.search(text)
    if brk:
        char = brk.group()
        raise PacketError.single(
            name,
            _line_at(text, brk.start()),
            (),
            f"line break {describe_char(char)}: {_BREAK_NAMES[char]} ends a line for YAML but "
            "not for most tools; packets break lines with LF (or CRLF) only",
        )
    at = first_unsafe(text.replace("\r\n", " \n"))
    if at is not None:
        raise PacketError.single(
            name,
            _line_at(text, at),
            (),
            f"character {describe_char(text[at])} is not allowed in a packet "
            "(control characters and bidi controls would reach the terminal or reorder text)",
        )


def _reader_problem(text: str, exc: yaml.reader.ReaderError, name: str) -> PacketError:
    line = text[: exc.position].count("\n") + 1
    return PacketError.single(
        name, line, (), f"character U+{exc.character:04X} is not allowed in YAML text"
    )


def load_yaml(raw: bytes, name: str) -> LoadedYaml:
    """Load one strict YAML document from `raw` bytes; `name` is used in error messages.

    Raises PacketError (never anything else) for: files over MAX_BYTES, non-UTF-8 bytes, empty
    files, line breaks other than LF/CRLF, control and bidi characters (in the file or written
    as escapes in text), syntax errors, several documents, aliases/anchors, explicit tags on
    anything, non-text or duplicate mapping keys, and nesting deeper than MAX_DEPTH.
    """
    text = _decode(raw, name)
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise _reader_problem(text, exc, name) from None
    try:
        node = loader.get_single_node()
    except _Refused as exc:
        raise PacketError.single(name, exc.line, (), exc.message) from None
    except yaml.composer.ComposerError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        msg = (
            "a packet is a single YAML document"
            if "single document" in str(exc.context or "")
            else str(exc.problem)
        )
        raise PacketError.single(name, line, (), msg) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        detail = f"{exc.context}, {exc.problem}" if exc.context else str(exc.problem)
        raise PacketError.single(name, line, (), f"YAML syntax error: {detail}") from None
    except yaml.reader.ReaderError as exc:
        raise _reader_problem(text, exc, name) from None
    except yaml.YAMLError as exc:
        raise PacketError.single(name, 1, (), f"YAML error: {exc}") from None
    except RecursionError:
        raise PacketError.single(name, 1, (), "nesting too deep") from None
    finally:
        loader.dispose()
    if node is None:
        raise PacketError.single(name, 1, (), "file holds no YAML document")
    loaded = LoadedYaml(data=None)
    problems: list[Problem] = []
    loaded.data = _build(node, (), loaded.lines, problems, name)
    if problems:
        raise PacketError(problems)
    return loaded


def _build(
    node: Node,
    path: tuple[str | int, ...],
    lines: dict[tuple[str | int, ...], int],
    problems: list[Problem],
    name: str,
) -> Any:
    """Turn a composed node into dicts/lists/str/Plain/None, recording lines (recursive: the
    tree is at most MAX_DEPTH deep)."""
    lines.setdefault(path, node.start_mark.line + 1)
    explicit = getattr(node, "explicit_tag", None)
    if explicit is not None:
        problems.append(_tag_problem(name, node, path, explicit))
        return None
    if isinstance(node, ScalarNode):
        unsafe = _unsafe_problem(name, node, path, "text")
        if unsafe:
            problems.append(unsafe)
            return None
        if node.tag == PLAIN_TAG:
            return None if node.value in NULL_WORDS else Plain(node.value)
        if node.tag == STR_TAG:
            return str(node.value)
        problems.append(
            Problem(
                name,
                node.start_mark.line + 1,
                path,
                f"YAML tag {node.tag!r} is not accepted: packets hold plain data",
            )
        )
        return None
    if isinstance(node, SequenceNode):
        return [
            _build(item, (*path, i), lines, problems, name) for i, item in enumerate(node.value)
        ]
    if isinstance(node, MappingNode):
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            explicit = getattr(key_node, "explicit_tag", None)
            if explicit is not None:
                problems.append(_tag_problem(name, key_node, path, explicit))
                continue
            if isinstance(key_node, ScalarNode):
                unsafe = _unsafe_problem(name, key_node, path, "key")
                if unsafe:
                    problems.append(unsafe)
                    continue
            if not isinstance(key_node, ScalarNode) or key_node.tag not in (PLAIN_TAG, STR_TAG):
                problems.append(Problem(name, line, path, "mapping keys must be plain text"))
                continue
            key = str(key_node.value)
            if key == "<<" and key_node.tag == PLAIN_TAG:
                problems.append(Problem(name, line, path, "YAML merge keys (<<) are not accepted"))
                continue
            if key in out:
                problems.append(
                    Problem(
                        name,
                        line,
                        (*path, key),
                        f"duplicate key '{key}' (first given at line {first_line[key]})",
                    )
                )
                continue
            first_line[key] = line
            lines[(*path, key)] = line
            out[key] = _build(value_node, (*path, key), lines, problems, name)
        return out
    problems.append(Problem(name, node.start_mark.line + 1, path, "unsupported YAML node"))
    return None


def _tag_problem(name: str, node: Node, path: tuple[str | int, ...], tag: str) -> Problem:
    shown = printable(tag if len(tag) <= MAX_TAG_SHOWN else tag[: MAX_TAG_SHOWN - 3] + "...")
    return Problem(
        name,
        node.start_mark.line + 1,
        path,
        f"YAML tag '{shown}' is not accepted: packets hold plain data",
    )


def _unsafe_problem(
    name: str, node: ScalarNode, path: tuple[str | int, ...], what: str
) -> Problem | None:
    """A problem when a scalar (written with escapes such as "\\e" or "\\u202e") holds a
    character packet text may not hold; None when it is clean."""
    at = first_unsafe(node.value)
    if at is None:
        return None
    return Problem(
        name,
        node.start_mark.line + 1,
        path,
        f"{what} holds {describe_char(node.value[at])}: control characters, bidi controls and "
        "line separators are not accepted in packet text",
    )
