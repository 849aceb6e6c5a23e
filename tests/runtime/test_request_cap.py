"""`--requests` cannot walk around the packet's cap on inputs.workload.requests (issue 10.11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.schema import MAX_REQUESTS
from workbench.cli import main
from workbench.commands.run import check_request_cap


@pytest.fixture()
def packet(tmp_path: Path) -> Path:
    path = tmp_path / f"{DEFAULT_EXAMPLE}.yaml"
    path.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    return path


@pytest.mark.parametrize("command", ["run", "validate"])
def test_requests_over_the_cap_is_a_one_line_usage_error(
    command: str, packet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = packet.read_bytes()
    assert main([command, str(packet), "--requests", str(2 * MAX_REQUESTS)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert f"--requests {2 * MAX_REQUESTS} is over the cap of {MAX_REQUESTS}" in lines[0]
    assert "inputs.workload.requests" in lines[0]
    assert packet.read_bytes() == before  # nothing written


def test_the_cap_itself_is_allowed() -> None:
    check_request_cap(None)
    check_request_cap(MAX_REQUESTS)
    with pytest.raises(Exception, match="over the cap"):
        check_request_cap(MAX_REQUESTS + 1)
