"""The command line around the app: what loads textual, open/serve options, localhost only."""

from __future__ import annotations

import asyncio
import gc
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from packets.errors import UsageError
from packets.examples import DEFAULT_EXAMPLE, example_path
from workbench.app import WorkbenchApp
from workbench.cli import build_parser, main
from workbench.commands.serve import app_command, require_loopback
from workbench.core.hangup import HANGUP_POLL_S
from workbench.entry import start_without_gc

REPO = Path(__file__).resolve().parents[2]
BAD = REPO / "tests" / "packets" / "bad" / "p99-below-p95.yaml"


def modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return set(out.stdout.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["check", str(example_path(DEFAULT_EXAMPLE))],
        ["schema"],
        ["examples", "list"],
        ["run", str(example_path("mapping-dynamic-shapes")), "--requests", "500", "--json"],
        ["worksheet", str(example_path(DEFAULT_EXAMPLE)), "--json"],
    ],
    ids=["check", "schema", "examples", "run", "worksheet"],
)
def test_commands_without_the_app_never_import_textual(argv: list[str]) -> None:
    loaded = modules_after(
        "import contextlib, io\nfrom workbench.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): assert main({argv!r}) == 0"
    )
    assert "workbench.cli" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("textual", "textual_serve", "plotext")}


TEXTUAL_FREE = ["core.session", "core.drafts", "core.form", "core.facts", "core.keymap"]
TEXTUAL_FREE += ["core.stall", "core.steps", "core.heap", "lab.engine", "lab.config", "lab.views"]
TEXTUAL_FREE += ["lab.charts", "lab.chart_data", "review.state", "review.render", "mapping.view"]


def test_domain_modules_of_the_app_do_not_import_textual() -> None:
    loaded = modules_after("".join(f"import workbench.{module}\n" for module in TEXTUAL_FREE))
    assert {f"workbench.{module}" for module in TEXTUAL_FREE} <= loaded
    assert not {m for m in loaded if m.split(".")[0] == "textual"}


def test_open_reports_an_invalid_packet_before_any_screen(capsys: pytest.CaptureFixture) -> None:
    assert main(["open", str(BAD)]) == 1
    err = capsys.readouterr().err
    assert "p99_ms" in err and "Traceback" not in err


def test_open_takes_theme_and_no_mouse() -> None:
    args = build_parser("open").parse_args(
        ["open", "p.yaml", "--theme", "workbench-light", "--no-mouse"]
    )
    assert (args.packet, args.theme, args.no_mouse) == (Path("p.yaml"), "workbench-light", True)


def test_plain_workbench_with_a_packet_or_options_means_open(
    capsys: pytest.CaptureFixture,
) -> None:
    assert main([str(BAD), "--no-mouse"]) == 1  # reached `open`: the packet was checked
    assert "p99_ms" in capsys.readouterr().err
    assert main(["--theme", "x", str(BAD)]) == 1


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1"])
def test_loopback_hosts_are_accepted(host: str) -> None:
    require_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::"])
def test_other_hosts_are_refused_with_one_line(host: str) -> None:
    with pytest.raises(UsageError, match="not a loopback address") as info:
        require_loopback(host)
    assert "\n" not in str(info.value)


def test_serve_refuses_a_public_host_from_the_command_line(
    capsys: pytest.CaptureFixture,
) -> None:
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_served_command_opens_the_packet_with_its_theme() -> None:
    command = app_command(Path("x.yaml"), "workbench-light")
    assert command.startswith(sys.executable)
    assert command.endswith(
        f"workbench.cli open {Path('x.yaml').resolve()} --theme workbench-light"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def served_screens(port: int) -> tuple[bytes, bytes]:
    """What a browser tab receives from the served app until the Packet step is drawn, and,
    after a few hang-up polls (a served app's output is a pipe, not a terminal), what it
    receives after ctrl+n until the Baseline step is drawn."""
    import aiohttp  # textual-serve's own HTTP library

    async def receive_until(ws, text: str) -> bytes:  # type: ignore[no-untyped-def]
        received = b""
        deadline = time.monotonic() + 20
        while text.encode() not in received and time.monotonic() < deadline:
            message = await ws.receive(timeout=20)
            if isinstance(message.data, bytes):
                received += message.data
        return received

    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24") as ws,
    ):
        await ws.send_json(["resize", {"width": 80, "height": 24}])
        first = await receive_until(ws, "1 · Packet")
        await asyncio.sleep(3 * HANGUP_POLL_S)
        await ws.send_json(["stdin", "\x0e"])  # ctrl+n
        second = await receive_until(ws, "2 · Baseline")
    return first, second


async def test_serve_runs_the_app_for_a_browser_on_localhost(home: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "workbench.cli", "serve", "--host", "127.0.0.1"]
    server = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the server never answered"
                await asyncio.sleep(0.1)
        assert "handoff-workbench" in page and f"ws://127.0.0.1:{port}/ws" in page
        screen, after_polls = await served_screens(port)
        assert "1 · Packet".encode() in screen and b"handoff-workbench" in screen
        assert "2 · Baseline".encode() in after_polls  # still running: no false hang-up
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def collector_restored():  # type: ignore[no-untyped-def]
    """Whatever a test does to the garbage collector, it is on again afterwards."""
    yield
    gc.enable()


def test_commands_turn_the_collector_back_on_after_start_up(
    collector_restored: None, capsys: pytest.CaptureFixture
) -> None:
    """The console script starts with the collector off (workbench.entry); every command but
    the app turns it on again once the command line is parsed."""
    start_without_gc()
    assert not gc.isenabled()
    assert main(["check", str(example_path(DEFAULT_EXAMPLE))]) == 0
    assert gc.isenabled()
    capsys.readouterr()


async def test_the_app_turns_the_collector_on_after_its_first_frame(
    collector_restored: None, make_app: Callable[..., WorkbenchApp]
) -> None:
    start_without_gc()
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # start-up's objects frozen out of later scans


def test_python_dash_m_workbench_is_the_console_script() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "examples", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0 and DEFAULT_EXAMPLE in done.stdout
