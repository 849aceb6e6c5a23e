"""Characters a packet may not hold, and the one sanitizer for text printed from a packet.

A terminal obeys control characters it is sent: ESC starts a sequence that can recolour,
move the cursor, retitle the window or (on some terminals) write to the clipboard; bidi
overrides and isolates (U+202A-202E, U+2066-2069) make text display in an order other than
the one it is read in ("Trojan Source", CVE-2021-42574); NEL, LS and PS are line breaks to
YAML and to many viewers. Packets refuse all of them in text (`UNSAFE`, except LF, which
multi-line text needs); whatever is printed from a packet still goes through `printable`, so
a file name, a message quoting a value, or text built in Python can never reach the terminal
raw.
"""

from __future__ import annotations

import re

# C0 controls except tab (U+0009) and LF (U+000A), DEL, C1 controls (NEL U+0085 among them),
# the line and paragraph separators, bidi embeddings/overrides and bidi isolates.
_UNSAFE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
UNSAFE = re.compile(f"[{_UNSAFE_CLASS}]")
_UNPRINTABLE = re.compile(f"[{_UNSAFE_CLASS}\n]")

_NAMES = {
    "\x1b": "ESC",
    "\r": "CR",
    "\x7f": "DEL",
    "\x85": "NEL",
    "\u2028": "LINE SEPARATOR",
    "\u2029": "PARAGRAPH SEPARATOR",
    "\u202a": "LEFT-TO-RIGHT EMBEDDING",
    "\u202b": "RIGHT-TO-LEFT EMBEDDING",
    "\u202c": "POP DIRECTIONAL FORMATTING",
    "\u202d": "LEFT-TO-RIGHT OVERRIDE",
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u2067": "RIGHT-TO-LEFT ISOLATE",
    "\u2068": "FIRST STRONG ISOLATE",
    "\u2069": "POP DIRECTIONAL ISOLATE",
}


def describe_char(char: str) -> str:
    """`U+001B (ESC)`: a character named without printing it."""
    name = _NAMES.get(char)
    if name is None:
        name = "control character" if ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F else ""
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def first_unsafe(text: str) -> int | None:
    """Index of the first character a packet's text may not hold (None when there is none)."""
    match = UNSAFE.search(text)
    return match.start() if match else None


def printable(text: str) -> str:
    """`text` safe to print on one terminal line: every unsafe character and LF becomes a
    visible escape (`\\x1b`, `\\u202e`, `\\n`); everything else is kept as it is."""
    return _UNPRINTABLE.sub(_escape, text)


def printable_lines(text: str) -> str:
    """Like `printable`, but LF line breaks are kept (for multi-line output)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable_json(text: str) -> str:
    """JSON text with every unsafe character left in it as a `\\uXXXX` escape (JSON's own
    escapes, so the text still parses to the same values). JSON structure is ASCII, so such a
    character can only sit inside a string, where the escape means the same character."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
