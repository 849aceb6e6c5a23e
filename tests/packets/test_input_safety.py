"""Line breaks, tags and characters a packet may not hold, and the sanitizer for printed text.

Each case here passed `check` before issue 10: a `#` comment could carry a YAML section after a
lone CR, a `!!python` tag on a list signed and exported, and escapes in packet text reached the
terminal raw from `check` and `diff`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from packets.errors import PacketError
from packets.load import check_packet_data, parse_packet
from packets.safe_text import UNSAFE, first_unsafe, printable, printable_json, printable_lines
from workbench.cli import main
from workbench.commands.render import run_text

UNSAFE_CHARS = [
    *(chr(c) for c in range(0x20) if c not in (0x09, 0x0A)),
    "\x7f",
    *(chr(c) for c in range(0x80, 0xA0)),
    "\u2028",
    "\u2029",
    *(chr(c) for c in range(0x202A, 0x202F)),
    *(chr(c) for c in range(0x2066, 0x206A)),
]


def _refused(raw: bytes) -> list[str]:
    with pytest.raises(PacketError) as info:
        parse_packet(raw, "p.yaml")
    return [str(p) for p in info.value.problems]


# --- item 1: line breaks other than LF and CRLF ------------------------------------------------

BREAKS = {"CR": "\r", "NEL": "\x85", "LS": "\u2028", "PS": "\u2029"}
PLACES = {
    "comment": ("# cut launch", "# cut{}launch"),
    "text value": ("title: Llama", "title: Llama{}x"),
    "quoted text": ("name: Ada Park", 'name: "Ada{}Park"'),
    "key": ("    max_batch: 8\n", "    max_batch: 8\n    max{}batch: 8\n"),
    "line start": ("\nseed:", "\n{}seed:"),
}


@pytest.mark.parametrize("brk", sorted(BREAKS))
@pytest.mark.parametrize("place", sorted(PLACES))
def test_line_breaks_other_than_lf_are_refused_with_their_line(
    default_example_bytes: bytes, brk: str, place: str
) -> None:
    old, new = PLACES[place]
    text = default_example_bytes.decode()
    assert old in text
    raw = text.replace(old, new.format(BREAKS[brk]), 1).encode()
    line = raw.decode()[: raw.decode().index(BREAKS[brk])].count("\n") + 1
    problems = _refused(raw)
    assert len(problems) == 1
    assert problems[0].startswith(f"p.yaml:{line}: <root>: line break U+")
    assert "packets break lines with LF (or CRLF) only" in problems[0]


def test_a_section_smuggled_after_a_cr_in_a_comment_is_refused(
    default_example_bytes: bytes,
) -> None:
    """PyYAML reads what follows a lone CR as a new line: a reviewer (or grep) sees a comment,
    YAML sees a replaced `inputs.sla`."""
    text = default_example_bytes.decode()
    smuggled = "seed: 20261129  # reviewed\rcandidates: []\n"
    raw = text.replace("seed: 20261129\n", smuggled, 1).encode()
    assert b"\rcandidates: []" in raw
    problems = _refused(raw)
    assert problems == [
        "p.yaml:17: <root>: line break U+000D (CR): a CR not followed by LF ends a line for "
        "YAML but not for most tools; packets break lines with LF (or CRLF) only"
    ]


def test_crlf_line_ends_read_exactly_as_lf(default_example_bytes: bytes) -> None:
    crlf = default_example_bytes.replace(b"\n", b"\r\n")
    assert parse_packet(crlf).packet == parse_packet(default_example_bytes).packet


# --- item 7: tags on any node ------------------------------------------------------------------

TAGGED = {
    "scalar": ("title: Llama", "title: !!python/object:os.system Llama", "title"),
    "str scalar": ("title: Llama", "title: !!str Llama", "title"),
    "non-specific": ("title: Llama", "title: ! Llama", "title"),
    "local tag": ("title: Llama", "title: !shell Llama", "title"),
    "sequence": (
        "values: [512, 1024, 2048, 4096, 8192]",
        "values: !!python/object/apply:os.system [512, 1024, 2048, 4096, 8192]",
        "inputs.workload.shapes.seq_len.values",
    ),
    "block mapping": (
        "  batch_policy:\n",
        "  batch_policy: !!python/object/apply:os.system\n",
        "baseline.batch_policy",
    ),
    "flow mapping": (
        "gate_up_proj: {m: 32, n: 64, k: 64}",
        "gate_up_proj: !!map {m: 32, n: 64, k: 64}",
        "candidates[4].tiles.gate_up_proj",
    ),
    "key": ("  placement: central-queue", "  !!str placement: central-queue", "baseline"),
}


@pytest.mark.parametrize("kind", sorted(TAGGED))
def test_tags_are_refused_on_every_kind_of_node(default_example_bytes: bytes, kind: str) -> None:
    old, new, path = TAGGED[kind]
    text = default_example_bytes.decode()
    assert old in text
    problems = _refused(text.replace(old, new, 1).encode())
    assert len(problems) == 1, problems
    assert f": {path}: YAML tag '" in problems[0]
    assert problems[0].endswith("is not accepted: packets hold plain data")


# --- item 7: control, bidi and separator characters in text and keys ---------------------------


def _escape(char: str) -> str:
    """The YAML double-quoted escape for `char`."""
    return f"\\u{ord(char):04x}"


@pytest.mark.parametrize("char", UNSAFE_CHARS, ids=lambda c: f"U+{ord(c):04X}")
def test_unsafe_characters_are_refused_in_text_and_keys(
    default_example_bytes: bytes, char: str
) -> None:
    text = default_example_bytes.decode()
    as_text = text.replace("title: Llama", f'title: "x{_escape(char)}y" # Llama', 1)
    as_key = text.replace("    max_batch: 8\n", f'    max_batch: 8\n    "k{_escape(char)}": 1\n', 1)
    for raw, path, what in ((as_text, "title", "text"), (as_key, "baseline.batch_policy", "key")):
        problems = _refused(raw.encode())
        assert len(problems) == 1, problems
        assert f": {path}: {what} holds U+{ord(char):04X}" in problems[0]
        assert first_unsafe(problems[0]) is None and char not in problems[0]


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\x1b"], ids=["RLO", "LRI", "ESC"])
def test_raw_bidi_and_control_characters_are_refused_even_in_comments(
    default_example_bytes: bytes, char: str
) -> None:
    raw = default_example_bytes.decode().replace("# cut launch", f"# cut {char}launch", 1)
    problems = _refused(raw.encode())
    assert len(problems) == 1
    assert problems[0].startswith(f"p.yaml:4: <root>: character U+{ord(char):04X}")


def test_tab_and_line_feed_stay_allowed_in_text(default_example_bytes: bytes) -> None:
    raw = default_example_bytes.replace(
        b"title: Llama-3.2-3B-class decode block on npu-8c - fusion and tile plan",
        b'title: "tab\\there\\nand a second line"',
        1,
    )
    assert parse_packet(raw).packet.title == "tab\there\nand a second line"


def test_text_built_in_python_is_refused_too(default_loaded) -> None:  # type: ignore[no-untyped-def]
    """The app's edits go through check_packet_data, not the YAML reader."""
    data = default_loaded.packet.model_dump(mode="python")
    data["inputs"]["metadata"]["compiler"] = "npu-cc \x1b]52;c;cm0gLXJmIH4=\x07"
    with pytest.raises(PacketError) as info:
        check_packet_data(data, "edit", None)
    (problem,) = info.value.problems
    assert str(problem) == (
        "edit: inputs.metadata.compiler: text holds U+001B (ESC): control characters, bidi "
        "controls and line separators are not accepted in packet text"
    )


# --- the sanitizer and where it is used --------------------------------------------------------


@given(st.text())
def test_printable_output_holds_nothing_unsafe_and_keeps_safe_text(text: str) -> None:
    out = printable(text)
    assert first_unsafe(out) is None and "\n" not in out
    if first_unsafe(text) is None and "\n" not in text:
        assert out == text
    assert printable_lines(text).split("\n") == [printable(line) for line in text.split("\n")]


@given(st.lists(st.text(), max_size=4))
def test_printable_json_is_safe_and_reads_back_the_same(values: list[str]) -> None:
    dumped = printable_json(json.dumps(values, ensure_ascii=False))
    assert UNSAFE.search(dumped) is None
    assert json.loads(dumped) == values


def test_printable_names_each_escape() -> None:
    assert printable("a\x1b[31mb\u202ec\nd\te") == "a\\x1b[31mb\\u202ec\\nd\te"


def test_check_prints_no_escape_from_a_file_name(
    tmp_path: Path, default_example_bytes: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "ok\x1b[2J.yaml"
    good.write_bytes(default_example_bytes)
    bad = tmp_path / "bad\x1b]0;x\x07.yaml"
    bad.write_bytes(default_example_bytes.replace(b"seed: 20261129", b"seed: -1"))
    assert main(["check", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert first_unsafe(out) is None
    assert "ok\\x1b[2J.yaml: ok" in out
    assert "bad\\x1b]0;x\\x07.yaml:17: seed: must be at least 0, got -1" in out


def test_diff_never_prints_packet_escapes(
    tmp_path: Path, default_example_bytes: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "a.yaml"
    old.write_bytes(default_example_bytes)
    new = tmp_path / "b.yaml"
    new.write_bytes(
        default_example_bytes.replace(b"title: Llama", b'title: "\\e[2J\\e]0;owned\\a" # Llama', 1)
    )
    assert main(["diff", str(old), str(new)]) == 1
    captured = capsys.readouterr()
    assert first_unsafe(captured.out + captured.err) is None
    assert "title: text holds U+001B (ESC)" in captured.err


def test_run_text_escapes_whatever_the_summary_holds(
    default_example_bytes: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(default_example_bytes)
    assert main(["run", str(packet), "--requests", "300", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    summary["packet"] = "p\x1b[2J\u202e"
    summary["classification"]["primary"]["command"] = "workbench run \x1b]0;x\x07"
    text = run_text(summary)
    assert first_unsafe(text) is None
    assert text.startswith("p\\x1b[2J\\u202e / baseline")
    assert "workbench run \\x1b]0;x\\x07" in text


def test_a_huge_number_is_described_not_echoed(default_example_bytes: bytes) -> None:
    digits = "9" * 30
    raw = default_example_bytes.replace(b"hidden: 3072", f"hidden: {digits}".encode())
    (problem,) = _refused(raw)
    assert problem.endswith(
        "inputs.workload.block.hidden: must be at most 65536, got a 30-digit number"
    )


def test_a_refused_tag_is_quoted_without_its_escapes(default_example_bytes: bytes) -> None:
    """A verbatim tag's %-escapes decode to any character (here ESC [2J, clear screen)."""
    raw = default_example_bytes.replace(b"title: Llama", b"title: !<tag:x%1B[2J> Llama", 1)
    (problem,) = _refused(raw)
    assert problem == (
        "p.yaml:14: title: YAML tag 'tag:x\\x1b[2J' is not accepted: packets hold plain data"
    )


def test_usage_errors_print_no_escape_from_what_the_user_typed(tmp_path, capsys) -> None:
    """A missing file's name (a usage error, not a packet problem) is sanitized too."""
    from workbench.cli import main

    name = tmp_path / "evil\x1b]0;pwned\x07.yaml"
    assert main(["check", str(name)]) != 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b" in err
