"""Screenshots of every step at 80x24 and 160x48 (and each theme), compared with the SVGs kept in
tests/app/snapshots/. Regenerate them with UPDATE_SNAPSHOTS=1 after an intended change; a changed
screen fails with a diff of its text (or a note that only colours or styles changed)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from workbench.app import WorkbenchApp

from .conftest import LARGE, SMALL, settle
from .svg_text import svg_text

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


def compare(name: str, svg: str, size: tuple[int, int]) -> str:
    """'' when `svg` matches the kept snapshot (or was just written), else a readable report."""
    path = SNAPSHOTS / f"{name}.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
        return ""
    if not path.exists():
        return f"{name}: no snapshot at {path} (run with UPDATE_SNAPSHOTS=1 to create it)"
    expected = path.read_text(encoding="utf-8")
    if expected == svg:
        return ""
    old, new = svg_text(expected, *size), svg_text(svg, *size)
    if old != new:
        diff = difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"{name} (kept)", f"{name} (now)", lineterm=""
        )
        return "\n".join(diff)
    changed = next(
        i
        for i, (a, b) in enumerate(zip(expected.splitlines(), svg.splitlines(), strict=False))
        if a != b
    )
    return f"{name}: same text, different colours or styles (first at SVG line {changed + 1})"


async def screenshots(
    app: WorkbenchApp, size: tuple[int, int], steps: list[str], tag: str = ""
) -> list[str]:
    """Visit `steps` by their jump keys and compare each screen (named with `tag` when given,
    e.g. no-color); returns the failures."""
    failures = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for number, step in enumerate(steps, start=1):
            await pilot.press(str(number))
            await settle(app, pilot)  # model results (and the start-up warm-up) are in
            assert app.current_step == step
            name = f"{step}-{tag or app.theme}-{size[0]}x{size[1]}"
            failures.append(compare(name, app.export_screenshot(title=name), size))
    return [f for f in failures if f]


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_every_step_matches_its_snapshot(make_app, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    steps = [step.id for step in app.steps]
    failures = await screenshots(app, size, steps)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("theme", ["workbench-light", "workbench-high-contrast", "workbench-ansi"])
async def test_packet_step_in_each_theme_matches_its_snapshot(make_app, theme: str) -> None:  # type: ignore[no-untyped-def]
    app = make_app(theme=theme)
    failures = await screenshots(app, SMALL, ["packet"])
    assert app.theme == theme
    assert not failures, "\n\n".join(failures)


async def test_no_color_steps_match_their_snapshots(make_app, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """NO_COLOR at 80x24: the lab steps' charts tell series apart by glyph, focus by style."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    steps = [step.id for step in app.steps][:6]
    failures = await screenshots(app, SMALL, steps, tag="no-color")
    assert not failures, "\n\n".join(failures)


async def test_a_refusal_in_the_status_line_matches_its_snapshot(make_app, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A refused action at 80x24 (NO_COLOR): said in the status line above the footer, with
    focus left on the step list (reversed cursor row)."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("6")
        await settle(app, pilot)
        await pilot.press("escape", "ctrl+r")
        await settle(app, pilot)
        name = "proposal-refused-no-color-80x24"
        failure = compare(name, app.export_screenshot(title=name), SMALL)
    assert not failure, failure


async def test_serving_baseline_matches_its_snapshot(make_app, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A serving packet's Baseline step: TTFT/TPOT/latency tails, SLA and the KV chart."""
    from packets.examples import example_bytes

    path = tmp_path / "serving" / "packet.yaml"
    path.parent.mkdir()
    path.write_bytes(example_bytes("llm-serving-continuous"))
    app = make_app(path)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press(str([step.id for step in app.steps].index("baseline") + 1))
        await settle(app, pilot)
        assert app.current_step == "baseline"
        name = f"baseline-serving-{app.theme}-{SMALL[0]}x{SMALL[1]}"
        failure = compare(name, app.export_screenshot(title=name), SMALL)
    assert not failure, failure
