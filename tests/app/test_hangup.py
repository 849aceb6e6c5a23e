"""Noticing a hung-up terminal without a SIGHUP (workbench.core.hangup)."""

from __future__ import annotations

import os

from workbench.core.hangup import terminal_hung_up


def test_a_live_terminal_is_not_hung_up_and_a_closed_one_is() -> None:
    master, slave = os.openpty()
    try:
        assert not terminal_hung_up(slave)
        os.write(master, b"typed ahead\n")
        assert not terminal_hung_up(slave)  # input waiting is not a hang-up ...
        assert os.read(slave, 64) == b"typed ahead\n"  # ... and polling consumed none of it
        os.close(master)
        master = -1
        assert terminal_hung_up(slave)
    finally:
        os.close(slave)
        if master >= 0:
            os.close(master)


def test_a_pipe_whose_other_end_closed_is_hung_up() -> None:
    read_end, write_end = os.pipe()
    try:
        assert not terminal_hung_up(read_end)
        os.close(write_end)
        assert terminal_hung_up(read_end)
    finally:
        os.close(read_end)


def test_a_closed_descriptor_counts_as_gone() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    assert terminal_hung_up(read_end)
