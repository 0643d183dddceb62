"""The schema-valid harness itself: a spec whose stage breaks a bound is still caught.

The stages here are stand-ins (a spin loop, an allocation, a loop in C) for what a spec could make
archkit do: the test is of the harness's bounds, not of archkit. Each runs in the harness's own
forked child (`valid_harness._in_fork`), with the bounds lowered so that the test stays short.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz import valid_harness as vh


@pytest.fixture
def harness(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[[Callable[[], Any]], tuple[list[str], Any]]:
    """Run one stand-in stage as `check` through `run_valid`; reproducers go to tmp_path."""
    monkeypatch.setattr(vh, "warm", lambda: None)  # no archkit stage runs here
    monkeypatch.setattr(vh, "write_reproducer", lambda text, out, family: tmp_path / "repro.yaml")

    def run(stage: Callable[[], Any]) -> tuple[list[str], vh.ValidTally]:
        monkeypatch.setattr(vh, "_stages", lambda path, render: {"check": stage})
        tally = vh.ValidTally()
        return vh.run_valid("a: 1\n", tally, render=False), tally

    return run


def _spin(seconds: float) -> Callable[[], None]:
    def spin() -> None:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass

    return spin


def test_a_stage_within_its_bound_passes(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(vh.BOUNDS_S, "check", 1.0)
    problems, tally = harness(_spin(0.05))
    assert problems == []
    assert (tally.inputs, tally.stages["check"], tally.over_bounds, tally.tracebacks) == (1, 1, 0, 0)
    assert 0.05 <= tally.slowest["check"] < 1.0


def test_a_stage_past_its_cpu_bound_is_caught(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(vh.BOUNDS_S, "check", 0.2)
    problems, tally = harness(_spin(30.0))  # stopped by the CPU alarm, twice (the retry)
    assert problems == ["check: no answer within 0.2 CPU s"]
    assert (tally.over_bounds, tally.tracebacks, len(tally.failures)) == (1, 0, 1)


def test_a_stage_stuck_in_compiled_code_is_ended_by_the_cpu_limit(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sum` over a range runs in C and never returns to the interpreter, so the CPU alarm is not
    handled; the child's RLIMIT_CPU ends it, and the parent counts it over the bounds."""
    monkeypatch.setitem(vh.BOUNDS_S, "check", 0.2)
    monkeypatch.setattr(vh, "CHILD_CPU_S", 1)
    problems, tally = harness(lambda: sum(range(10**13)))
    assert len(problems) == 1 and "died (signal 24)" in problems[0], problems
    assert "past its 1 CPU s limit" in problems[0]
    assert (tally.over_bounds, tally.tracebacks) == (1, 0)


def test_a_stage_past_the_memory_bound_is_caught(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound is the child's own peak RSS: what it starts with plus what the spec adds. A child
    does not start at the parent's RSS (fork copies the page tables of anonymous memory; mapped
    files fault in later), so the baseline is a stage that adds nothing: an xdist worker that had
    mapped much more than it touched once read 96+ MiB above its children (CI, 2026-12-03). The
    bound is lowered to 64 MiB above that baseline; 160 MiB touched."""
    _, idle = harness(lambda: None)
    base = idle.peak_rss_mib
    monkeypatch.setattr(vh, "MAX_RSS_MIB", base + 64)
    problems, tally = harness(lambda: bytearray(b"\x01") * (160 * 2**20))
    assert len(problems) == 1 and problems[0].startswith("peak RSS"), (problems, base)
    assert tally.over_bounds == 1 and tally.peak_rss_mib > base + 64
    problems, tally = harness(lambda: None)  # the same child without the allocation passes
    assert problems == [] and tally.peak_rss_mib < base + 64


def test_an_exception_is_a_traceback_and_a_dead_child_a_crash(harness: Any) -> None:
    def boom() -> None:
        raise ZeroDivisionError("in a stage")

    problems, tally = harness(boom)
    assert problems == ["check: traceback: ZeroDivisionError: in a stage"]
    assert (tally.tracebacks, tally.over_bounds) == (1, 0)

    def die() -> None:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGTERM)  # not SIGSEGV: faulthandler would print a dump

    problems, tally = harness(die)
    assert len(problems) == 1 and "died (signal 15)" in problems[0] and "limit" not in problems[0]
    assert (tally.tracebacks, tally.over_bounds) == (1, 0)


def test_an_alarm_that_surfaces_as_another_exception_is_over_the_bound(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Numba wraps the alarm's exception in a SystemError, which the rule runner reports as AK199:
    raised after the bound's CPU time, it is a run over the bound, not a crash."""
    monkeypatch.setitem(vh.BOUNDS_S, "check", 0.2)

    def wrapped() -> None:
        crashed = False
        try:
            _spin(30.0)()
        except BaseException:  # noqa: BLE001 - as the rule runner does: a diagnostic, no chain
            crashed = True
        if crashed:
            raise AssertionError("rule crash: internal error in rule AK701: SystemError")

    problems, tally = harness(wrapped)
    # the CPU alarm, or on a busy machine the wall-clock one (12 times the bound) first
    assert len(problems) == 1 and problems[0].startswith("check: no answer within"), problems
    assert problems[0].endswith("(AssertionError at the alarm)") or "wall time" in problems[0]
    assert (tally.over_bounds, tally.tracebacks) == (1, 0)


def test_a_paused_stage_is_run_again_not_counted(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage that does not run (paused by `measure`'s SIGSTOP; a sleep stands in for it) hears the
    wall-clock net (12 x 0.05 s) at ~0 CPU s: starved, not over its bound. Run again, it passes: the
    first two tries are starved, the third answers at once."""
    monkeypatch.setitem(vh.BOUNDS_S, "check", 0.05)
    calls: list[int] = []

    def paused_twice() -> None:
        calls.append(1)  # the child's own list: the retries run in the same forked child
        if len(calls) <= 2:
            time.sleep(5)

    problems, tally = harness(paused_twice)
    assert problems == [] and (tally.over_bounds, tally.tracebacks) == (0, 0)

    def always_paused() -> None:
        time.sleep(5)

    monkeypatch.setattr(vh, "STARVED_WALL_S", 1.0)
    problems, tally = harness(always_paused)
    # tried again for STARVED_WALL_S, every try starved: said so, and counted
    assert len(problems) == 1 and problems[0].startswith("check: starved: the 0.6 s wall-clock net at 0.0")
    assert tally.over_bounds == 1


def test_a_stage_resumed_by_measure_gets_its_retries_anew(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each try of this stage is starved and then resumed (a SIGCONT, as `measure` sends when it ends
    a pause): the retry budget (STARVED_WALL_S, here 1 s) counts from the last resume, so the fifth
    try, 2.5 s after the first, still runs, and answers; without resumes it would have been counted
    over after ~1 s (the test above)."""
    monkeypatch.setitem(vh.BOUNDS_S, "check", 0.05)
    monkeypatch.setattr(vh, "STARVED_WALL_S", 1.0)
    calls: list[int] = []

    def paused_and_resumed() -> None:
        calls.append(1)
        if len(calls) <= 4:
            os.kill(os.getpid(), signal.SIGCONT)
            time.sleep(5)  # the wall-clock net (0.6 s) ends it: starved

    problems, tally = harness(paused_and_resumed)
    assert problems == [] and (tally.over_bounds, tally.tracebacks) == (0, 0)
