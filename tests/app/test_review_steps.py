"""The review steps driven by keys alone (Pilot). At 80x24 the whole walk: propose, run and
cancel the validation matrix, edit rollback triggers, recommend and override, see guards block
signing and export, add artifacts, sign with ssh-keygen keys (one encrypted), export, then edit an
input and see the signatures go stale. At 160x48 the same steps by the main path (each key costs a
round trip through the app, so the refusals are checked once, at the small size)."""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static

from packets.examples import example_bytes
from packets.load import load_packet
from packets.signoff import verify_packet
from tests.signing.conftest import ssh_keygen_generate
from workbench.app import WorkbenchApp
from workbench.cli import main
from workbench.screens.confirm import ConfirmScreen
from workbench.screens.matrix import MatrixScreen
from workbench.widgets.field_editor import FieldEditor

from .conftest import LARGE, SMALL
from .svg_text import svg_text
from .test_snapshots import compare

MakeApp = Callable[..., WorkbenchApp]
PASSPHRASE = "correct horse battery"
RATIONALE = "Add 4096."  # short texts: every key is a round trip through the app


@pytest.fixture(scope="module")
def ssh_keys(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three Ed25519 keys made by ssh-keygen; the second is encrypted with PASSPHRASE."""
    folder = tmp_path_factory.mktemp("keys")
    return [
        ssh_keygen_generate(folder / f"id_{i}", ["-t", "ed25519"], passphrase)
        for i, passphrase in enumerate(["", PASSPHRASE, ""])
    ]


@pytest.fixture
def mapping_packet(tmp_path: Path) -> Path:
    """A writable copy of the mapping example, 4,000 requests per run (quick to propose)."""
    path = tmp_path / "review" / "mapping.yaml"
    path.parent.mkdir()
    path.write_bytes(
        example_bytes("mapping-dynamic-shapes").replace(b"requests: 20000", b"requests: 4000")
    )
    return path


def text_of(app: WorkbenchApp, selector: str) -> str:
    """The plain text a Static (or Note) on the current screen shows, runs of white space
    (wrapping, table padding) made single spaces."""
    content = app.screen.query_one(selector, Static).content
    if not isinstance(content, str):
        console = Console(width=200, file=io.StringIO(), record=True)
        console.print(content)
        content = console.export_text(styles=False)
    return " ".join(content.split())


def field(app: WorkbenchApp, editor_id: str) -> FieldEditor:
    return app.screen.query_one(f"#{editor_id}", FieldEditor)


async def tab_to(pilot, app: WorkbenchApp, editor_id: str) -> FieldEditor:  # type: ignore[no-untyped-def]
    """Press Tab (or shift+Tab, whichever is shorter) until the editor's input has focus: keys
    only, as a user would move."""
    target = field(app, editor_id)
    chain = app.screen.focus_chain
    here = chain.index(app.focused) if app.focused in chain else 0
    ahead = (chain.index(target.input) - here) % len(chain)
    key = "tab" if ahead <= len(chain) - ahead else "shift+tab"
    for _ in range(len(chain)):
        if app.focused is target.input:
            return target
        await pilot.press(key)
    raise AssertionError(f"Tab never reached {editor_id}")


async def type_in(pilot, text: str, *, enter: bool = True) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("end", "ctrl+u", *text, *(["enter"] if enter else []))
    await pilot.pause()


async def settle(pilot, app: WorkbenchApp) -> None:  # type: ignore[no-untyped-def]
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def goto(pilot, app: WorkbenchApp, number: int) -> None:  # type: ignore[no-untyped-def]
    """Leave any field (Escape), then jump to step `number` by its digit."""
    await pilot.press("escape", str(number))
    await settle(pilot, app)
    assert app.step_number(app.current_step) == number


def done(app: WorkbenchApp) -> dict[str, bool]:
    return {row.id: row.done for row in app.step_rows()}


async def propose(pilot, app: WorkbenchApp, *, refusal: bool) -> None:  # type: ignore[no-untyped-def]
    """Proposal step: a rationale is required, then ctrl+r records the proposal."""
    await goto(pilot, app, 6)
    if refusal:
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert field(app, "proposal-rationale").problem == "a proposal needs a written rationale"
        assert app.working.packet.outputs.mitigation is None
    await tab_to(pilot, app, "proposal-rationale")
    await type_in(pilot, RATIONALE)
    await pilot.press("ctrl+r")
    await settle(pilot, app)
    out = app.working.packet.outputs
    assert out.mitigation.candidate == "add-4096-bucket"
    assert out.mitigation.rationale == RATIONALE and out.classification is not None
    assert "add-4096-bucket (chosen)" in text_of(app, "#mitigation")
    assert "reproduce: workbench run" in text_of(app, "#classification")
    assert done(app)["proposal"] and app.working.dirty


async def validate(pilot, app: WorkbenchApp, *, cancel: bool) -> None:  # type: ignore[no-untyped-def]
    """Validation step: a quick matrix with progress; a cancelled run writes nothing (400,000
    requests per run: each chunk of four runs takes long enough to cancel within the run)."""
    await goto(pilot, app, 7)
    screen = app.screen
    assert isinstance(screen, MatrixScreen)
    seen: list[tuple[int, int | None]] = []
    show = screen._show_progress
    screen._show_progress = lambda d, t: (seen.append((d, t)), show(d, t))[1]  # type: ignore[method-assign]
    await pilot.press("ctrl+y")  # quick: 2 loads x 2 mixes x 1 seed, 4,000 requests
    await pilot.pause()
    assert field(app, "matrix-loads").input.value == "1.0, 1.25"
    await pilot.press("ctrl+r")
    await settle(pilot, app)
    matrix = app.working.packet.outputs.validation_matrix
    assert matrix is not None and len(matrix.cells) == 8
    assert seen[0] == (0, None) and (4, 8) in seen and seen[-1] == (8, 8)
    assert not screen.query_one("#matrix-progress-row").display  # hidden once done
    assert app.working.packet.outputs.rollback_triggers and done(app)["validation"]
    assert "memory check:" in text_of(app, "#matrix")
    if not cancel:
        return
    await pilot.press("ctrl+y")  # back to the full default matrix, with many requests
    await tab_to(pilot, app, "matrix-requests")
    await type_in(pilot, "400000")
    seen.clear()
    await pilot.press("ctrl+r")
    for _ in range(600):  # until the first chunk (4 of 36 cells) is in
        await pilot.pause(0.05)
        if any(d >= 4 for d, _ in seen):
            break
    await pilot.press("ctrl+g")
    await settle(pilot, app)
    assert app.working.packet.outputs.validation_matrix == matrix  # nothing written
    assert max(d for d, _ in seen) < 36
    error = text_of(app, "#error")
    assert error.startswith("Matrix cancelled (cancelled after") and "nothing written" in error
    assert not screen.query_one("#matrix-progress-row").display


async def edit_triggers(pilot, app: WorkbenchApp) -> None:  # type: ignore[no-untyped-def]
    """Rollback triggers: refused in place, then applied; up/down picks another trigger; ctrl+l
    puts the defaults back."""
    triggers = app.working.packet.outputs.rollback_triggers
    threshold = await tab_to(pilot, app, "trigger-threshold")
    default = triggers[0].threshold
    await type_in(pilot, "1.5e")
    assert threshold.problem.startswith("expected a number")
    assert app.working.packet.outputs.rollback_triggers[0].threshold == default
    await type_in(pilot, str(default + 100))
    assert threshold.problem == ""
    assert app.working.packet.outputs.rollback_triggers[0].threshold == default + 100
    assert f"{default + 100:g}" in text_of(app, "#triggers-table")
    window = await tab_to(pilot, app, "trigger-window_s")
    await type_in(pilot, "0")
    assert window.problem == "must be greater than 0, got 0.0"
    assert app.working.packet.outputs.rollback_triggers[0].window_s == triggers[0].window_s
    await tab_to(pilot, app, "trigger-number")
    await pilot.press("up")  # the second trigger into the editors
    await pilot.pause()
    assert threshold.input.value == repr(triggers[1].threshold) and window.problem == ""
    assert text_of(app, "#trigger-origin") == f"derived from: {triggers[1].derived_from}"
    assert dict(app.working.pending) == {"outputs.rollback_triggers[0].window_s": "0"}
    await pilot.press("escape", "ctrl+l")
    await pilot.pause()
    assert app.working.packet.outputs.rollback_triggers == triggers
    assert dict(app.working.pending) == {}  # the refused text went with the old triggers


async def recommend(pilot, app: WorkbenchApp, *, override: bool) -> None:  # type: ignore[no-untyped-def]
    """Release step: recommend by the rule; an override needs a written rationale."""
    await goto(pilot, app, 8)
    await pilot.press("ctrl+r")
    await pilot.pause()
    release = app.working.packet.outputs.release
    assert release is not None and release.override is None and done(app)["release"]
    assert release.rule in text_of(app, "#release")
    if not override:
        return
    await pilot.press("ctrl+y")  # no rationale: refused under the field
    await pilot.pause()
    assert "written rationale" in field(app, "override-rationale").problem
    assert app.working.packet.outputs.release == release
    assert "No override recorded" in app.screen.query_one("#status-line", Static).content
    await tab_to(pilot, app, "override-rationale")  # the refusal moved no focus
    await type_in(pilot, "Ship behind triggers")  # the shortest rationale taken: 20 characters
    await pilot.press("ctrl+y")
    await pilot.pause()
    overridden = app.working.packet.outputs.release
    assert overridden.override is not None and overridden.override.role == "compiler-lead"
    assert overridden.override.rationale == "Ship behind triggers"
    assert overridden.recommendation == "ship-guarded" and overridden.computed == release.computed
    assert "override rationale: Ship behind triggers" in text_of(app, "#release")
    assert done(app)["release"]


async def add_artifacts(pilot, app: WorkbenchApp, exported: Path) -> None:  # type: ignore[no-untyped-def]
    """Review step: guards block signing and export until every owner has an artifact."""
    await goto(pilot, app, 9)
    assert "block signing and export" in text_of(app, "#status")
    assert "✗ block every owner carries a closure artifact" in text_of(app, "#guards")
    await pilot.press("ctrl+r")
    await pilot.pause()
    assert "signing refused: review guards block (artifacts)" in text_of(app, "#sign-problem")
    await tab_to(pilot, app, "export-path")
    await type_in(pilot, exported.name)
    await pilot.press("ctrl+y")  # disabled while a guard blocks
    await pilot.pause()
    assert not exported.exists()
    assert "export is disabled while guards block: artifacts" in text_of(app, "#export-problem")
    for index in (1, 2):
        await tab_to(pilot, app, f"owner-{index}-ref")
        await type_in(pilot, f"r{index}.md")
    await tab_to(pilot, app, "owner-1-summary")
    await type_in(pilot, "no fallback")
    owners = app.working.packet.owners
    assert owners[1].artifact.ref == "r1.md" and owners[1].artifact.summary == "no fallback"
    assert owners[2].artifact.ref == "r2.md"
    assert "✗ block" not in text_of(app, "#guards")


async def sign(pilot, app: WorkbenchApp, key: str, *, next_role: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Pick the next owner (down in the role field) and a key file, then ctrl+r."""
    if next_role:
        await tab_to(pilot, app, "sign-role")
        await pilot.press("down")
    await tab_to(pilot, app, "sign-key")
    await type_in(pilot, key)
    await pilot.press("ctrl+r")
    await settle(pilot, app)


async def sign_first(pilot, app: WorkbenchApp, packet: Path) -> None:  # type: ignore[no-untyped-def]
    """The first signature: unsaved edits are saved first, after a yes."""
    await tab_to(pilot, app, "sign-key")
    await type_in(pilot, "k0")
    await pilot.press("ctrl+r")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.press("y")
    await settle(pilot, app)
    assert not app.working.dirty
    report = verify_packet(load_packet(packet))
    assert [r.status for r in report.roles] == ["valid", "missing", "missing"]
    assert text_of(app, "#signatures").count("✓ valid") == 1


async def sign_the_rest(pilot, app: WorkbenchApp, packet: Path, size) -> None:  # type: ignore[no-untyped-def]
    """The encrypted key: refused without its passphrase, signs with it; then the last owner."""
    await sign(pilot, app, "k1", next_role=True)  # runtime-lead; no passphrase typed
    assert "the key is encrypted: type its passphrase" in text_of(app, "#sign-problem")
    passphrase = await tab_to(pilot, app, "sign-passphrase")
    await type_in(pilot, PASSPHRASE, enter=False)
    assert passphrase.input.password
    assert PASSPHRASE not in svg_text(app.export_screenshot(), *size)  # shown as dots
    await pilot.press("ctrl+r")
    await settle(pilot, app)
    assert passphrase.input.value == ""  # not kept once used
    await sign(pilot, app, "k2", next_role=True)  # observability-engineer
    report = verify_packet(load_packet(packet))
    assert report.ok, report.reasons
    assert text_of(app, "#signatures").count("✓ valid") == 3
    assert done(app)["review"]
    assert PASSPHRASE.encode() not in packet.read_bytes()


async def export(pilot, app: WorkbenchApp, packet: Path, exported: Path) -> None:  # type: ignore[no-untyped-def]
    """YAML byte for byte; a signed target needs a yes and keeps a backup; then markdown."""
    await pilot.press("ctrl+y")
    await pilot.pause()
    assert exported.read_bytes() == packet.read_bytes()
    exported.write_bytes(exported.read_bytes() + b"# marker\n")
    await pilot.press("ctrl+y")
    await pilot.pause()
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.press("n")
    await pilot.pause()
    assert exported.read_bytes().endswith(b"# marker\n")
    await pilot.press("ctrl+y")
    await pilot.pause()
    await pilot.press("y")
    await pilot.pause()
    assert exported.read_bytes() == packet.read_bytes()
    assert exported.with_name(exported.name + ".bak").read_bytes().endswith(b"# marker\n")
    await tab_to(pilot, app, "export-path")
    await type_in(pilot, "r.md")
    await tab_to(pilot, app, "export-format")
    await pilot.press("down")  # markdown
    await pilot.press("ctrl+y")
    await pilot.pause()
    markdown = (exported.parent / "r.md").read_text()
    assert markdown.startswith("# Llama-3-8B-class prefill") and "## Review guards" in markdown
    assert markdown.count(": valid - ") == 3


async def edit_an_input(pilot, app: WorkbenchApp) -> None:  # type: ignore[no-untyped-def]
    """An edit to an input makes every signature stale, and the outputs with it."""
    await goto(pilot, app, 1)
    await tab_to(pilot, app, "field-workload-block-phase")
    await pilot.press("down")  # prefill -> decode
    await pilot.pause()
    assert app.working.packet.inputs.workload.block.phase == "decode" and app.working.dirty
    await goto(pilot, app, 9)
    assert text_of(app, "#signatures").count("⚠ stale") == 3
    assert not done(app)["review"] and not done(app)["proposal"]
    assert "computed from older inputs" in text_of(app, "#guards")


async def keys_help_and_palette(pilot, app: WorkbenchApp) -> None:  # type: ignore[no-untyped-def]
    """Every review key has an id, a help row and a palette entry naming its key."""
    rows = {row.binding_id: row for row in app.help_rows()}
    expected = {
        7: {"run-matrix": "Run matrix", "cancel-matrix": "Cancel run"},
        8: {"recommend": "Recommend", "override": "Override"},
        9: {"sign": "Sign", "export": "Export"},
    }
    for number, bindings in expected.items():
        await goto(pilot, app, number)
        titles = {c.title: c.help for c in app.palette_commands(app.screen)}
        for binding_id, description in bindings.items():
            assert rows[binding_id].description == description
            assert titles[description] == rows[binding_id].keys  # the palette names the key
    assert {"propose", "mapping-run", "default-triggers", "confirm-yes"} <= set(rows)


async def mapping_burst(pilot, app: WorkbenchApp, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Mapping step: a burst of changes runs the model once, for the last one."""
    import workbench.screens.mapping as mapping

    runs: list[str] = []
    real = mapping.run_mapping

    def counted(working, config, key):  # type: ignore[no-untyped-def]
        runs.append(config)
        return real(working, config, key)

    monkeypatch.setattr(mapping, "run_mapping", counted)
    await goto(pilot, app, 5)
    assert runs == ["baseline"] and "baseline, 4,000 requests" in text_of(app, "#status")
    monkeypatch.setattr(mapping.MappingScreen, "DEBOUNCE_S", 1.0)  # keys come far faster
    await tab_to(pilot, app, "mapping-config")
    await pilot.press("down", "down", "down")  # three configurations in a burst
    await settle(pilot, app)
    last = field(app, "mapping-config").input.value
    assert last == app.working.packet.candidates[2].name
    assert runs == ["baseline", last]  # the two in between never ran
    assert text_of(app, "#status").startswith(f"{last}, 4,000 requests")
    assert "fallback" in text_of(app, "#mapping-buckets")


async def mapping_report(pilot, app: WorkbenchApp, folder: Path) -> None:  # type: ignore[no-untyped-def]
    """Mapping step: the closed-loop report on telemetry files, an action applied as a new
    candidate, and an action that is not a candidate refused in one line."""
    from triage.telemetry.synthetic import write_synthetic_telemetry

    (folder / "telemetry").mkdir()
    files = write_synthetic_telemetry(load_packet(app.working.source), folder / "telemetry")
    files["requests.csv"].rename("r.csv")  # short names to type, in the current folder
    files["kernels.csv"].rename("k.csv")
    await tab_to(pilot, app, "mapping-telemetry")
    await type_in(pilot, "r.csv,k.csv")
    await pilot.press("ctrl+y")
    await settle(pilot, app)
    report = app.screen.report[1]  # type: ignore[attr-defined]
    shown = text_of(app, "#report")
    assert "compile-time accuracy: MdAPE" in shown and "observed p99:" in shown
    config = field(app, "mapping-config").input.value  # the one the burst left chosen
    assert report["command"].endswith(f"--telemetry r.csv k.csv --candidate {config}")
    first = report["actions"][0]
    assert first["rank"] == 1 and first["applies_as"] == "candidate" and first["id"] in shown
    count = len(app.working.packet.candidates)
    await pilot.press("ctrl+l")  # action 1
    await settle(pilot, app)
    added = app.working.packet.candidates
    assert len(added) == count + 1 and added[-1].name == first["candidate"]["name"]
    assert added[-1].compiled_shapes.seq_len == first["compiled_shapes"]
    recalibrate = next(a["rank"] for a in report["actions"] if a["kind"] == "recalibrate")
    await tab_to(pilot, app, "mapping-action")
    await pilot.press(*["up"] * (recalibrate - 1))
    await pilot.press("ctrl+l")
    await pilot.pause()
    assert "changes inputs.hardware, not a candidate" in text_of(app, "#action-problem")
    assert len(app.working.packet.candidates) == count + 1


@pytest.fixture
def keys_here(ssh_keys: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path with the keys copied in as k0, k1, k2 (short relative paths to type)."""
    monkeypatch.chdir(tmp_path)
    for i, key in enumerate(ssh_keys):
        shutil.copy(key, f"k{i}")
    return tmp_path


async def test_review_steps_by_keys_80x24(
    make_app: MakeApp, mapping_packet: Path, keys_here: Path
) -> None:
    app = make_app(mapping_packet)
    exported = keys_here / "e.yaml"
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        await propose(pilot, app, refusal=True)
        await validate(pilot, app, cancel=True)
        await edit_triggers(pilot, app)
        await recommend(pilot, app, override=True)
        await add_artifacts(pilot, app, exported)
        await sign_first(pilot, app, mapping_packet)
        await sign_the_rest(pilot, app, mapping_packet, SMALL)
        await export(pilot, app, mapping_packet, exported)
        await edit_an_input(pilot, app)


async def test_review_steps_by_keys_160x48(
    make_app: MakeApp, mapping_packet: Path, keys_here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(mapping_packet)
    exported = keys_here / "e.yaml"
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot, app)
        await keys_help_and_palette(pilot, app)
        await mapping_burst(pilot, app, monkeypatch)
        await mapping_report(pilot, app, keys_here)
        await propose(pilot, app, refusal=False)
        await validate(pilot, app, cancel=False)
        await recommend(pilot, app, override=False)
        await add_artifacts(pilot, app, exported)
        await sign_first(pilot, app, mapping_packet)


@pytest.fixture
def reviewed_packet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The mapping example taken through propose, a quick validate and recommend on the command
    line, as `packet.yaml` in the current folder (recorded commands name that relative path)."""
    monkeypatch.chdir(tmp_path)
    path = Path("packet.yaml")
    path.write_bytes(
        example_bytes("mapping-dynamic-shapes").replace(b"requests: 20000", b"requests: 4000")
    )
    assert main(["propose", str(path), "--candidate", "add-4096-bucket", "--rationale", RATIONALE,
                 "--trade-off", "one more compiled bucket to keep warm"]) == 0  # fmt: skip
    assert main(["validate", str(path), "--quick"]) == 0
    assert main(["recommend", str(path)]) == 0
    return path


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_review_steps_with_outputs_match_their_snapshots(
    make_app: MakeApp, reviewed_packet: Path, size: tuple[int, int]
) -> None:
    app = make_app(reviewed_packet)
    failures = []
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        for number in (6, 7, 8, 9):
            await goto(pilot, app, number)
            await settle(pilot, app)  # the trigger editors mount after the first frame
            name = f"{app.current_step}-outputs-{size[0]}x{size[1]}"
            failures.append(compare(name, app.export_screenshot(title=name), size))
        assert all(done(app)[s] for s in ("proposal", "validation", "release"))
    failures = [f for f in failures if f]
    assert not failures, "\n\n".join(failures)
