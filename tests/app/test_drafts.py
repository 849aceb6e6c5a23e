"""Drafts: atomic autosave keyed by the packet's absolute path; bad drafts set aside, not lost."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Static

from packets.dump import dump_packet
from packets.errors import UsageError, dotted
from packets.load import load_packet
from workbench.app import DRAFT_DELAY_S, WorkbenchApp
from workbench.core import drafts
from workbench.core.session import WorkingPacket, apply_edit, set_pending
from workbench.screens.modals import DraftQuestion, RecoverScreen
from workbench.widgets.field_editor import FieldEditor

from .conftest import LARGE, SMALL, working_for

P95 = ("inputs", "sla", "p95_ms")


def edited(packet_file: Path) -> WorkingPacket:
    result = apply_edit(working_for(packet_file), P95, 70.0)
    assert isinstance(result, WorkingPacket)
    return set_pending(result, ("inputs", "sla", "p99_ms"), "9O")


def test_state_home_follows_xdg_and_falls_back_to_home() -> None:
    assert drafts.state_home({"XDG_STATE_HOME": "/s", "HOME": "/h"}) == Path("/s")
    assert drafts.state_home({"XDG_STATE_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.local/state"
    )
    assert drafts.state_home({"HOME": "/h"}) == Path("/h/.local/state")
    assert drafts.drafts_dir({"HOME": "/h"}) == Path("/h/.local/state/handoff-workbench/drafts")


def test_draft_is_keyed_by_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "drafts"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    same = drafts.draft_path(Path("a/p.yaml"), folder)
    assert same == drafts.draft_path(tmp_path / "a" / "p.yaml", folder)
    assert same != drafts.draft_path(tmp_path / "b" / "p.yaml", folder)
    assert same.name.startswith("p-") and same.name.endswith(".draft.json")


def test_round_trip_keeps_packet_and_refused_text(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    working = edited(packet_file)
    path = drafts.write_draft(working, folder)
    assert path is not None and path.exists()
    assert os.stat(path).st_mode & 0o777 == 0o600  # drafts may hold unreleased figures
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.Draft)
    assert found.working.packet == working.packet
    assert dict(found.working.pending) == {"inputs.sla.p99_ms": "9O"}
    assert not found.file_changed_since(packet_file.read_bytes())


def test_draft_bytes_are_deterministic(packet_file: Path) -> None:
    assert drafts.draft_bytes(edited(packet_file)) == drafts.draft_bytes(edited(packet_file))


def test_clean_session_removes_its_draft(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    path = drafts.write_draft(edited(packet_file), folder)
    assert path is not None
    assert drafts.write_draft(working_for(packet_file), folder) is None
    assert not path.exists()
    assert drafts.read_draft(packet_file, folder) is None


def with_p95(packet_file: Path, value: float) -> WorkingPacket:
    result = apply_edit(working_for(packet_file), P95, value)
    assert isinstance(result, WorkingPacket)
    return result


def test_background_writes_land_in_order_and_only_the_latest_waiting_one_is_written(
    packet_file: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "drafts"
    release = threading.Event()
    seen: list[drafts.DraftOutcome] = []

    def on_done(outcome: drafts.DraftOutcome) -> None:
        seen.append(outcome)
        release.wait(10)  # holds the writer thread: later submissions wait meanwhile

    writer = drafts.DraftWriter(on_done)
    first = writer.submit(with_p95(packet_file, 70.0), folder)
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:
        time.sleep(0.005)
    writer.submit(with_p95(packet_file, 71.0), folder)  # replaced before it is written
    last = writer.submit(with_p95(packet_file, 72.0), folder)
    release.set()
    assert writer.wait(10)
    assert [o.generation for o in seen] == [first, last]
    assert all(o.error is None and o.path is not None for o in seen)
    assert writer.last_outcome == seen[-1]
    writer.close()
    deadline = time.monotonic() + 10
    while any(t.name == "draft-writer" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the writer thread outlived close()"
        time.sleep(0.01)
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.Draft) and found.working.packet.inputs.sla.p95_ms == 72.0


def test_an_unclosed_writer_does_not_keep_its_owner_alive(
    packet_file: Path, tmp_path: Path
) -> None:
    """The thread holds a bound `on_done` weakly: an owner dropped without close() is
    collected, the write in flight still lands, and the thread then ends."""

    class Owner:
        def __init__(self) -> None:
            self.writer = drafts.DraftWriter(self.done)

        def done(self, outcome: drafts.DraftOutcome) -> None:
            pass

    owner = Owner()
    writer = owner.writer
    writer.submit(with_p95(packet_file, 70.0), tmp_path / "drafts")
    assert writer.wait(10)
    gone = weakref.ref(owner)
    del owner
    gc.collect()
    assert gone() is None
    assert drafts.read_draft(packet_file, tmp_path / "drafts") is not None
    deadline = time.monotonic() + 10 * drafts.OWNER_CHECK_S
    while writer._thread is not None:  # the thread notices its owner has gone, and ends
        assert time.monotonic() < deadline, "the writer thread outlived its owner"
        time.sleep(0.05)


def test_write_now_waits_for_the_write_in_flight_and_supersedes_what_waits(
    packet_file: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "drafts"
    writer = drafts.DraftWriter(lambda outcome: None)
    queued = writer.submit(with_p95(packet_file, 70.0), folder)
    now = writer.write_now(working_for(packet_file), folder)  # nothing unsaved: removes it
    assert now.generation > queued and now.path is None and now.error is None
    assert writer.wait(10)
    assert drafts.read_draft(packet_file, folder) is None  # the queued write never lands after


def test_a_background_write_that_fails_says_why_in_one_line(
    packet_file: Path, tmp_path: Path
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the drafts folder should be")
    outcomes: list[drafts.DraftOutcome] = []
    writer = drafts.DraftWriter(outcomes.append)
    writer.submit(with_p95(packet_file, 70.0), blocked / "drafts")
    assert writer.wait(10) and len(outcomes) == 1
    error = outcomes[0].error
    assert error is not None and "cannot create drafts folder" in error and "\n" not in error


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b'{"format": "something-else"}', "not a handoff-workbench-draft/1 file"),
        (b'{"format": "handoff-workbench-draft/1"}', "missing packet"),
    ],
)
def test_unreadable_draft_is_set_aside_never_deleted(
    packet_file: Path, tmp_path: Path, content: bytes, reason: str
) -> None:
    folder = tmp_path / "drafts"
    folder.mkdir()
    path = drafts.draft_path(packet_file, folder)
    path.write_bytes(content)
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.CorruptDraft)
    assert reason in found.reason
    assert not path.exists()
    assert found.set_aside_as.read_bytes() == content
    assert found.set_aside_as.name == path.name + ".corrupt-1"
    assert "kept as" in str(found) and "\n" not in str(found)


def test_draft_with_an_invalid_packet_is_corrupt(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    drafts.write_draft(edited(packet_file), folder)
    path = drafts.draft_path(packet_file, folder)
    path.write_text(path.read_text().replace("p95_ms: 70.0", "p95_ms: -70.0"))
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.CorruptDraft)
    assert "its packet is invalid" in found.reason and "p95_ms" in found.reason


def test_second_corrupt_draft_gets_the_next_number(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    folder.mkdir()
    path = drafts.draft_path(packet_file, folder)
    for n in (1, 2):
        path.write_bytes(b"garbage")
        found = drafts.read_draft(packet_file, folder)
        assert isinstance(found, drafts.CorruptDraft)
        assert found.set_aside_as.name.endswith(f".corrupt-{n}")


def test_recover_keeps_the_file_as_saved_state(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    drafts.write_draft(edited(packet_file), folder)
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.Draft)
    current = working_for(packet_file)
    recovered = drafts.recover(found, current)
    assert recovered.packet.inputs.sla.p95_ms == 70.0
    assert recovered.saved == current.packet
    assert recovered.dirty
    assert recovered.source_sha256 == current.source_sha256


def test_file_changed_since_draft_is_detected(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    drafts.write_draft(edited(packet_file), folder)
    packet_file.write_bytes(packet_file.read_bytes() + b"# changed\n")
    found = drafts.read_draft(packet_file, folder)
    assert isinstance(found, drafts.Draft)
    assert found.file_changed_since(packet_file.read_bytes())


def test_keep_both_writes_a_new_file_and_never_overwrites(
    packet_file: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "drafts"
    targets = []
    for _ in range(2):
        drafts.write_draft(edited(packet_file), folder)
        found = drafts.read_draft(packet_file, folder)
        assert isinstance(found, drafts.Draft)
        targets.append(drafts.keep_both(found, packet_file))
        assert not found.path.exists()
    assert [t.name for t in targets] == ["packet.recovered.yaml", "packet.recovered-2.yaml"]
    for target in targets:
        assert target.read_bytes() == dump_packet(load_packet(target).packet)
        assert load_packet(target).packet.inputs.sla.p95_ms == 70.0


def test_draft_that_cannot_be_read_is_left_alone(packet_file: Path, tmp_path: Path) -> None:
    folder = tmp_path / "drafts"
    drafts.write_draft(edited(packet_file), folder)
    path = drafts.draft_path(packet_file, folder)
    path.chmod(0o000)
    try:
        if os.access(path, os.R_OK):  # running as root: permissions do not stop reads
            path.chmod(0o600)
            path.unlink()
            path.mkdir()  # a folder where the draft should be cannot be read either
        with pytest.raises(UsageError, match="cannot read draft"):
            drafts.read_draft(packet_file, folder)
        assert path.exists()
    finally:
        path.chmod(0o700)


# --- the draft holds exactly the text in each field, however the keys arrive (issue 10) ------

CV = ("inputs", "workload", "arrivals", "cv")
CV_ID = "#field-workload-arrivals-cv"
KEY_NAMES = {".": "full_stop"}


def burst(app: WorkbenchApp, text: str) -> None:
    """Keys posted the way the driver posts a burst read from the terminal: all at once,
    before the app has handled any of them."""
    for ch in text:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), ch))


async def deliver(app: WorkbenchApp, pilot: Pilot, how: str) -> None:  # type: ignore[type-arg]
    if how == "burst":
        burst(app, "10.5")
    elif how == "pilot":
        await pilot.press(*"10.5")  # Pilot presses keys without pausing between them
    elif how == "paste":
        app.post_message(events.Paste("10.5"))
    else:  # a key, then a paste, then keys, in one burst
        burst(app, "1")
        app.post_message(events.Paste("0."))
        burst(app, "5")


def draft_pending(packet_file: Path, app: WorkbenchApp) -> dict[str, str]:
    body = json.loads(drafts.draft_path(packet_file, app.drafts_folder).read_text())
    return body["pending"]


@pytest.mark.parametrize("how", ["burst", "pilot", "paste", "burst-paste-burst"])
async def test_draft_holds_the_fields_text_whatever_the_key_arrival(
    make_app: Callable[..., WorkbenchApp], packet_file: Path, how: str
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        field = app.screen.query_one(CV_ID, FieldEditor)
        field.input.focus()
        await pilot.pause()
        await deliver(app, pilot, how)
        await pilot.pause(DRAFT_DELAY_S + 0.2)  # handled, and autosaved once typing paused
        assert field.input.value == "10.5"
        assert draft_pending(packet_file, app) == {dotted(CV): "10.5"}
        assert dict(app.working.pending) == {dotted(CV): "10.5"}
    # Reopened, the draft is offered with the field and its text, and recovers that text.
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RecoverScreen)
        shown = str(app.screen.query_one("#recover-text", Static).content)
        assert "  • inputs.workload.arrivals.cv: 10.5" in shown.splitlines()
        await pilot.press("r")
        await pilot.pause()
        assert app.screen.query_one(CV_ID, FieldEditor).input.value == "10.5"


def test_recovery_dialog_lists_pending_text_readably_and_sanitized() -> None:
    question = DraftQuestion(
        packet_path="/w/p.yaml",
        draft_path="/s/p.draft.json",
        changes=("inputs.precision.quality.measured: {bf16: 0.9991} -> {bf16: 0.99}",),
        pending=(("inputs.sla.p99_ms", "9O"), ("inputs.sla.p95_ms", "[b]7\x1b[31m5\nx")),
        file_changed=False,
    )
    lines = question.lines()
    assert "  • inputs.sla.p99_ms: 9O" in lines
    assert "  • inputs.sla.p95_ms: [b]7\\x1b[31m5\\x0ax" in lines  # one line, escapes visible
    assert question.refused_fields == ("inputs.sla.p99_ms", "inputs.sla.p95_ms")
    assert all("\x1b" not in line and "\n" not in line for line in lines)
    long = DraftQuestion("/p", "/d", (), (("inputs.metadata.compiler", "y" * 500),), False)
    assert len(long.lines()[-1]) < 100 and long.lines()[-1].endswith("…")


async def test_recovery_dialog_shows_values_not_python_reprs(
    make_app: Callable[..., WorkbenchApp], packet_file: Path
) -> None:
    working = working_for(packet_file)
    measured = ("inputs", "precision", "quality", "measured")
    result = apply_edit(working, measured, {"bf16": 0.99})
    assert isinstance(result, WorkingPacket)
    result = set_pending(result, ("inputs", "sla", "p99_ms"), "[red]9O")
    app = make_app()
    drafts.write_draft(result, app.drafts_folder)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RecoverScreen)
        shown = str(app.screen.query_one("#recover-text", Static).content).splitlines()
        assert "  • inputs.precision.quality.measured.bf16: 0.9991 -> 0.99" in shown
        assert "  • inputs.sla.p99_ms: [red]9O" in shown  # typed text is never markup
        assert not any("{'" in line or "'}" in line for line in shown)
