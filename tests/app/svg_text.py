"""Read the text back out of a Textual SVG screenshot (for readable snapshot diffs)."""

from __future__ import annotations

import html
import re

_TEXT_RE = re.compile(
    r'<text class="[^"]*" x="([0-9.]+)" y="[0-9.]+" textLength="[0-9.]+" '
    r'clip-path="url\(#[a-z0-9-]+-line-([0-9]+)\)">([^<]*)</text>'
)
CHAR_WIDTH_PX = 12.2  # Rich's SVG export places one terminal cell every 12.2 px


def svg_text(svg: str, width: int, height: int) -> str:
    """The screen's characters, one line per terminal row, trailing spaces removed."""
    rows = [[" "] * width for _ in range(height)]
    for x, line, content in _TEXT_RE.findall(svg):
        row, col = int(line), round(float(x) / CHAR_WIDTH_PX)
        for offset, char in enumerate(html.unescape(content).replace("\xa0", " ")):
            if 0 <= row < height and 0 <= col + offset < width:
                rows[row][col + offset] = char
    return "\n".join("".join(r).rstrip() for r in rows)
