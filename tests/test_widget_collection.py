"""Garbage collection is kept out of an explorer's moves (perfmodel.widgets.collection)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from perfmodel.widgets import collection, controls  # noqa: E402
from perfmodel.widgets.collection import collection_deferred  # noqa: E402


@pytest.fixture(autouse=True)
def _collector_on():
    """Each test starts and ends with automatic collection on and nothing pending."""
    gc.enable()
    yield
    if collection._resume_timer is not None:
        collection._resume_timer.cancel()
    collection._resume_timer, collection._paused, collection._depth = None, False, 0
    gc.enable()


@contextlib.contextmanager
def _no_pause():
    yield


def _explorer(seen: list[bool]):
    """A one-slider explorer whose view notes whether automatic collection was on."""

    def view(top: int) -> None:
        seen.append(gc.isenabled())
        plt.subplots(figsize=(3, 2))[1].plot([0, top])

    slider = widgets.IntSlider(value=1, min=1, max=9)
    controls.live_plot(view, {"top": slider})
    return slider


def test_a_move_draws_with_automatic_collection_paused(monkeypatch):
    seen: list[bool] = []
    slider = _explorer(seen)

    inside = lambda: collection._depth > 0  # noqa: E731

    def collections_in_a_move(top: int) -> list[int]:
        started: list[int] = []

        def note(phase, info):
            if phase == "start" and inside():  # while the move draws and sends its figure
                started.append(info["generation"])

        gc.callbacks.append(note)
        try:
            slider.value = top
        finally:
            gc.callbacks.remove(note)
        return started

    old = gc.get_threshold()
    gc.set_threshold(1, 1, 1)  # were the collector on, a collection at every allocation
    try:
        paused = collections_in_a_move(5)
        monkeypatch.setattr(controls, "collection_deferred", _no_pause)  # as before the pause
        inside = lambda: True  # noqa: E731
        unpaused = collections_in_a_move(6)
    finally:
        gc.set_threshold(*old)
    # at most the young collection matplotlib may ask for as it closes a figure
    assert paused in ([], [1]), paused
    assert len(unpaused) > 100  # what the pause keeps out of a move
    assert seen == [False, False, True], seen  # the first figure and the move, paused
    assert gc.isenabled()  # no event loop: resumed as the move ended


def test_with_an_event_loop_collection_resumes_after_the_last_move():
    seen: list[bool] = []
    slider = _explorer(seen)

    async def moves() -> list[bool]:
        states = []
        slider.value = 3
        states.append(gc.isenabled())  # just after the move: still paused
        await asyncio.sleep(collection.RESUME_AFTER_S / 2)
        slider.value = 4  # a second move within the pause: it now ends after this one
        await asyncio.sleep(collection.RESUME_AFTER_S * 0.75)
        states.append(gc.isenabled())  # past the first move's resume time: still paused
        await asyncio.sleep(collection.RESUME_AFTER_S * 3)  # well past the pause, however busy
        states.append(gc.isenabled())
        return states

    assert asyncio.run(moves()) == [False, False, True]
    assert seen == [False, False, False]


def test_collection_resumes_even_when_the_event_loop_of_the_move_has_ended():
    seen: list[bool] = []
    slider = _explorer(seen)

    async def move() -> None:
        slider.value = 7

    asyncio.run(move())  # the loop is closed before the pause would end
    assert not gc.isenabled()
    time.sleep(collection.RESUME_AFTER_S * 3)
    assert gc.isenabled()


def test_a_collector_switched_off_by_someone_else_stays_off():
    gc.disable()
    with collection_deferred():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_blocks_resume_only_when_the_outermost_ends():
    with collection_deferred():
        with collection_deferred():
            pass
        assert not gc.isenabled()  # the inner block's end does not resume it
    assert gc.isenabled()


def test_a_move_that_fails_still_resumes_collection():
    with pytest.raises(RuntimeError), collection_deferred():
        raise RuntimeError("the view failed")
    assert gc.isenabled()
