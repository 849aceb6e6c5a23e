"""The collector pause background loads run under (workbench/core/heap.py): automatic
collections off while any load runs, what the loads built frozen afterwards, the collector
back as it was once the last load ends."""

from __future__ import annotations

import gc
import threading

import pytest

from workbench.core.heap import collector_paused, enable_collector


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_a_load_runs_without_collections_and_what_it_built_is_frozen(collector_on) -> None:
    before = gc.get_freeze_count()
    with collector_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(5000)]  # long-lived containers, as a module import makes
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(built)


def test_overlapping_loads_bring_the_collector_back_when_the_last_ends(collector_on) -> None:
    first_in, second_done, release = threading.Event(), threading.Event(), threading.Event()

    def second() -> None:
        first_in.wait()
        with collector_paused():
            pass
        second_done.set()

    thread = threading.Thread(target=second)
    thread.start()
    with collector_paused():
        first_in.set()
        second_done.wait(5)
        assert not gc.isenabled()  # the other load ended, this one still runs
        release.set()
    thread.join(5)
    assert gc.isenabled()


def test_the_collector_stays_off_when_it_was_off(collector_on) -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_turning_it_on_during_a_load_waits_for_the_load(collector_on) -> None:
    gc.disable()  # as the app starts (workbench.entry)
    with collector_paused():
        enable_collector()  # the app's first frame, while a load is running
        assert not gc.isenabled()
    assert gc.isenabled()
