"""`workbench open` runs the model's checks in a forked child: same verdict, no numpy up front.

Real forks, real child processes: the verdict of the child is compared with the in-process
check, a killed child and a process with threads fall back to checking in-process, and a packet
only the model refuses is refused by `open` as `check` refuses it, before any screen opens.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from packets.errors import PacketError, Problem
from packets.examples import DEFAULT_EXAMPLE, example_names, example_path
from packets.load import check_model_of, load_packet
from workbench.core.forked_check import ForkedModelCheck, _decode, _encode

REPO = Path(__file__).resolve().parents[2]
BAD = REPO / "tests" / "packets" / "bad"
MODEL_ONLY = ["sram-fits-no-tile.yaml", "lognormal-cv-zero.yaml"]
"""Packets the schema and cross-field checks accept and only the model's checks refuse."""


def inline_verdict(path: Path) -> list[str] | None:
    try:
        check_model_of(load_packet(path, model=False))
    except PacketError as exc:
        return [str(p) for p in exc.problems]
    return None


def forked_verdict(check: ForkedModelCheck) -> list[str] | None:
    try:
        check.wait()
    except PacketError as exc:
        return [str(p) for p in exc.problems]
    return None


PREAMBLE = (
    "import json, os, signal, sys\n"
    "from packets.errors import PacketError\n"
    "from packets.load import load_packet\n"
    "from workbench.core.forked_check import ForkedModelCheck\n"
)
"""Imports of the scripts that fork (in a fresh interpreter)."""


def in_a_fresh_process(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a new interpreter (no pytest threads: the fork happens there)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )


@pytest.mark.parametrize("name", MODEL_ONLY)
def test_model_only_problems_are_left_out_of_a_load_without_the_model(name: str) -> None:
    load_packet(BAD / name, model=False)  # accepted: only the model refuses it
    with pytest.raises(PacketError):
        load_packet(BAD / name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is Linux only")
def test_the_child_s_verdict_is_the_in_process_one() -> None:
    paths = [example_path(name) for name in example_names()] + [BAD / n for n in MODEL_ONLY]
    code = (
        PREAMBLE + "out = []\n"
        f"for path in {[str(p) for p in paths]!r}:\n"
        "    check = ForkedModelCheck.start(load_packet(path, model=False))\n"
        "    pid = check.pid\n"
        "    try:\n"
        "        check.wait(); verdict = None\n"
        "    except PacketError as exc:\n"
        "        verdict = [str(p) for p in exc.problems]\n"
        "    try:\n"
        "        os.waitpid(pid, os.WNOHANG); reaped = False\n"
        "    except ChildProcessError:\n"
        "        reaped = True\n"
        "    out.append([pid is not None and reaped, verdict])\n"
        "print(json.dumps(out))\n"
    )
    done = in_a_fresh_process(code)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout)
    assert all(forked for forked, _ in results)  # each ran in a child, reaped by `wait`
    assert [verdict for _, verdict in results] == [inline_verdict(p) for p in paths]
    assert sum(verdict is not None for _, verdict in results) == len(MODEL_ONLY)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is Linux only")
def test_a_killed_child_leaves_the_check_to_the_parent() -> None:
    code = (
        PREAMBLE
        + f"check = ForkedModelCheck.start(load_packet({str(BAD / MODEL_ONLY[0])!r}, model=False))\n"
        "assert check.pid is not None\n"
        "os.kill(check.pid, signal.SIGKILL)\n"
        "try:\n"
        "    check.wait()\n"
        "except PacketError as exc:\n"
        "    print(exc.problems[0])\n"
    )
    done = in_a_fresh_process(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == inline_verdict(BAD / MODEL_ONLY[0])[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is Linux only")
def test_the_verdict_arrives_on_a_descriptor_above_1023() -> None:
    """A process with many files open (select() cannot wait on such a descriptor)."""
    code = (
        "import resource\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))\n"
        "held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]\n"
        + PREAMBLE
        + f"check = ForkedModelCheck.start(load_packet({str(BAD / MODEL_ONLY[0])!r}, model=False))\n"
        "assert check.read_fd > 1023, check.read_fd\n"
        "answered, problems = check._child_verdict()\n"
        "print(answered, problems[0])\n"
    )
    done = in_a_fresh_process("import os\n" + code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == f"True {inline_verdict(BAD / MODEL_ONLY[0])[0]}"


def test_with_threads_running_there_is_no_fork_and_the_check_runs_at_wait() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        check = ForkedModelCheck.start(load_packet(BAD / MODEL_ONLY[0], model=False))
    finally:
        stop.set()
        worker.join()
    assert check.pid is None
    assert forked_verdict(check) == inline_verdict(BAD / MODEL_ONLY[0])


def test_a_second_wait_checks_again_in_process() -> None:
    check = ForkedModelCheck.start(load_packet(BAD / MODEL_ONLY[0], model=False))
    first = forked_verdict(check)
    assert check.pid is None  # reaped
    assert forked_verdict(check) == first == inline_verdict(BAD / MODEL_ONLY[0])


def test_verdicts_round_trip_and_malformed_ones_are_refused() -> None:
    problems = [Problem("p.yaml", 3, ("candidates", 0, "tiles"), "too big", "error")]
    assert _decode(_encode(problems)) == problems
    assert _decode(_encode(None)) is None
    for raw in [b"", b"{", b"[]", b'{"problems": []}', b'{"problems": [[1, 2]]}',
                b'{"problems": [["f", "x", [], "m", "error"]]}',
                b'{"problems": [["f", 1, [{"a": 1}], "m", "error"]]}']:  # fmt: skip
        with pytest.raises(ValueError):
            _decode(raw)


@pytest.mark.parametrize("name", MODEL_ONLY)
def test_open_refuses_a_packet_only_the_model_refuses_as_check_does(name: str) -> None:
    path = str(BAD / name)
    run = "import sys\nfrom workbench.cli import main\nsys.exit(main([{!r}, {!r}]))"
    opened = in_a_fresh_process(run.format("open", path))
    checked = in_a_fresh_process(run.format("check", path))
    assert opened.returncode == checked.returncode == 1
    first_line = opened.stderr.splitlines()[0]
    assert first_line in checked.stdout + checked.stderr
    assert "Traceback" not in opened.stderr and "\x1b" not in opened.stdout + opened.stderr


def test_the_first_frame_comes_without_numpy_and_numpy_loads_right_after(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from packets.examples import example_path\n"
        "from packets.load import load_packet\n"
        "from workbench.core.forked_check import ForkedModelCheck\n"
        f"path = example_path({DEFAULT_EXAMPLE!r})\n"
        "loaded = load_packet(path, model=False)\n"
        "check = ForkedModelCheck.start(loaded)\n"
        "from workbench.app import WorkbenchApp, WorkbenchOptions\n"
        "from workbench.core.session import open_working\n"
        "from workbench.screens.base import StepScreen\n"
        "class FirstFrame(WorkbenchApp):\n"
        "    seen = False\n"
        "    def _display(self, screen, renderable):\n"
        "        super()._display(screen, renderable)\n"
        "        if renderable is not None and isinstance(screen, StepScreen) and not self.seen:\n"
        "            self.seen = True\n"
        "            heavy = [m for m in ('numpy', 'numba', 'polars', 'model.compiler.plan')\n"
        "                     if m in sys.modules]\n"
        "            print('LOADED', *heavy, flush=True)\n"
        "            self.set_interval(0.02, self.numpy_loaded)\n"
        "    def numpy_loaded(self):\n"
        "        if 'numpy' in sys.modules:  # imported after the first frame, no key pressed\n"
        "            print('THEN numpy', 'workbench.screens.baseline' in sys.modules)\n"
        "            self.exit()\n"
        "app = FirstFrame(open_working(loaded, Path(path)),\n"
        "                 WorkbenchOptions(drafts_folder=Path(sys.argv[1])))\n"
        "check.wait()\n"
        "app.run(headless=True, size=(80, 24))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "drafts")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # numpy came on its own, not with the first preloaded step's modules (which wait 0.4 s
    # for the user to pause): a step switch right after the first frame finds it loading.
    assert done.stdout.split() == ["LOADED", "THEN", "numpy", "False"]
