"""Runs one schema-valid spec through check, capacity, the fault-tree analysis and (sometimes) a
render, each under its time bound, and watches the process's peak memory.

A failure is an exception (a traceback), a stage past its bound (twice: the machine is
shared), an AK199 (a rule crashed), a process that dies, or the spec's peak RSS passing
MAX_RSS_MIB (each spec runs in a forked child: `_in_fork`). Failures are written as
reproducers like the mutation fuzzer's (harness.write_reproducer).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from archkit import api
from archkit.faulttree import FaultTreeError, analyse
from tests.fuzz.harness import _TMP, Outcome, _alarm, _cpu_alarm, _Timeout, write_reproducer
from tests.fuzz.schema_valid import BASES

# issue 28: `check` within 2 s and 512 MiB, `capacity` within 5 s, for specs within the bounds
# (CPU seconds of this process: see _timed)
BOUNDS_S = {"check": 2.0, "capacity": 5.0, "faulttree": 5.0, "render": 10.0}
MAX_RSS_MIB = 512
WALL_FACTOR = 12  # wall-clock safety net: the machine is shared by ~8 engineers on 2 cores


@dataclass
class ValidTally:
    """Counts of a schema-valid run: inputs per stage, failures, the slowest of each stage."""

    inputs: int = 0
    stages: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BOUNDS_S, 0))
    slowest: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BOUNDS_S, 0.0))
    tracebacks: int = 0
    over_bounds: int = 0
    failures: list[Path] = field(default_factory=list)
    peak_rss_mib: float = 0.0  # the largest of the specs' own peaks (each in its own process)
    tools_rss_mib: float = 0.0  # the largest peak of a tool a render ran (dot, PlantUML's JVM)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


STARVED = "starved"  # a wall-clock net that fired before the stage had used its CPU bound
# how long a starved stage is tried again: a nice-19 batch under load 14 got no CPU for tens of
# seconds at a time (batch 30: four `check` runs starved in 27 s), and `measure` pauses for minutes
STARVED_WALL_S = 900.0
# ... counted from the last time the batch was resumed (SIGCONT: `measure` pauses a batch with
# SIGSTOP and resumes it with SIGCONT): a chain of measurements held batch 10 (2026-12-04, 01:00-
# 01:34) paused for most of 33 minutes, and a stage starved through 15 of them counted at 0.41 CPU s.
# A stage that is resumed again and again is still tried for at most this long in all.
STARVED_TOTAL_S = 4 * STARVED_WALL_S
_RESUMED = [0]  # SIGCONTs this child has heard


def _on_resume(signum: int, frame: FrameType | None) -> None:
    _RESUMED[0] += 1


def _timeout(fired: list[str], limit_s: float, took: float) -> str:
    """What a timeout says: over the CPU bound, or starved. The wall-clock net fires on a stage that
    used less CPU than its bound only when the process did not run: `measure` pauses background
    jobs (SIGSTOP) for minutes, and ITIMER_REAL counts on. Batches 8 and 30 (2026-12-03) counted two
    such stages, at 0.000 CPU s, as over the bounds when a chain of measurements paused them."""
    if fired and fired[0] == "wall" and took < limit_s:
        return f"{STARVED}: the {limit_s * WALL_FACTOR:g} s wall-clock net at {took:.3f} CPU s"
    return f"no answer within {limit_s:g} CPU s"


def _timed(fn: Callable[[], Any], limit_s: float) -> tuple[str | None, float, str]:
    """(problem or None, CPU seconds, traceback text) for one stage under a CPU-time alarm.

    The bound is CPU time of this process (ITIMER_PROF), not wall time: the machine is shared
    (load 10-20 on 2 cores this session), so a stage's wall time says more about the
    neighbours than about archkit. A wall-clock alarm at WALL_FACTOR times the bound stops a
    stage that waits without computing.
    """
    fired: list[str] = []  # which alarm fired: what surfaces may have lost it (below)

    def on_prof(signum: int, frame: FrameType | None) -> None:
        fired.append("cpu")
        _cpu_alarm(signum, frame)

    def on_real(signum: int, frame: FrameType | None) -> None:
        fired.append("wall")
        _alarm(signum, frame)

    old_prof = signal.signal(signal.SIGPROF, on_prof)
    old_real = signal.signal(signal.SIGALRM, on_real)
    start = time.process_time()
    try:
        signal.setitimer(signal.ITIMER_PROF, limit_s)
        signal.setitimer(signal.ITIMER_REAL, limit_s * WALL_FACTOR)
        try:
            fn()
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.process_time() - start
        return (f"took {took:.2f} CPU s, over {limit_s:g} s" if took > limit_s else None), took, ""
    except _Timeout:
        return _timeout(fired, limit_s, time.process_time() - start), time.process_time() - start, ""
    except BaseException as exc:  # noqa: BLE001 - every exception is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        cause: BaseException | None = exc
        while cause is not None:  # the alarm landed inside compiled code, which wrapped it
            if isinstance(cause, _Timeout):
                took = time.process_time() - start
                return _timeout(fired, limit_s, took), took, ""
            cause = cause.__cause__ or cause.__context__
        # an alarm fired, and what surfaced lost it: the rule runner turns numba's SystemError
        # ("returned a result with an exception set") into an AK199 diagnostic (the fuzz run of
        # 2026-12-03 14:10, AK701's simulation)
        if fired:
            took = time.process_time() - start
            if fired[0] == "wall" and took < limit_s:  # as `_timeout`: a stage that did not run
                return _timeout(fired, limit_s, took), took, ""
            limit = f"{limit_s:g} CPU s" if fired[0] == "cpu" else f"{limit_s * WALL_FACTOR:g} s of wall time"
            return f"no answer within {limit} ({type(exc).__name__} at the alarm)", took, ""
        return f"traceback: {type(exc).__name__}: {str(exc)[:200]}", 0.0, traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, old_prof)
        signal.signal(signal.SIGALRM, old_real)


def _stages(path: Path, render: bool) -> dict[str, Callable[[], Any]]:
    def check() -> None:
        report = api.check([path])
        crashed = [d for d in report.diagnostics if d.code == "AK199"]
        if crashed:
            raise AssertionError(f"rule crash: {crashed[0].message[:300]}")

    def faulttree() -> None:
        spec = api.load(path).spec
        for tree in spec.faulttrees if spec else []:
            with contextlib.suppress(FaultTreeError):  # a located finding (AK108/AK111), not a crash
                analyse(tree)

    def generate() -> None:
        spec = api.load(path).spec
        if spec is not None:
            api.generate(spec, path.name, formats=())

    stages: dict[str, Callable[[], Any]] = {
        "check": check,
        "capacity": lambda: api.capacity(path),
        "faulttree": faulttree,
    }
    if render:
        stages["render"] = generate
    return stages


def _stages_in_child(text: str, render: bool) -> dict[str, Any]:
    """Every stage for one spec, in this (forked) process: per stage (problem, CPU s, detail)."""
    path = _TMP / "valid.yaml"
    path.write_text(text, encoding="utf-8")
    signal.signal(signal.SIGCONT, _on_resume)
    out: dict[str, Any] = {"stages": {}}
    for stage, fn in _stages(path, render).items():
        problem, took, detail = _timed(fn, BOUNDS_S[stage])
        if problem and not problem.startswith("traceback"):
            problem, took, detail = _timed(fn, BOUNDS_S[stage])  # shared machine: slow twice to count
        # a paused or starved process says nothing of the spec: again, for STARVED_WALL_S since it
        # was last resumed
        first = since = time.monotonic()
        seen = _RESUMED[0]
        while (
            (problem or "").startswith(STARVED)
            and time.monotonic() - since < STARVED_WALL_S
            and time.monotonic() - first < STARVED_TOTAL_S
        ):
            problem, took, detail = _timed(fn, BOUNDS_S[stage])
            if _RESUMED[0] != seen:
                since, seen = time.monotonic(), _RESUMED[0]
        out["stages"][stage] = [problem, took, detail]
    out["rss_mib"] = peak_rss_mib()
    # Graphviz and PlantUML run as child processes: their peak is reported, the 512 MiB bound is
    # archkit's own process (the Java heap is PlantUML's, sized by its JVM)
    out["tools_rss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return out


# The child's own CPU limit, a safety net under the bounds (which stay those above): the CPU alarm
# (_timed) is handled only when the interpreter runs, so a stage stuck in compiled code (numba, a
# C loop) would never hear it; RLIMIT_CPU ends such a child with SIGXCPU, which the parent counts
# as a run over the bounds. Every stage twice at its bound, plus the start: a child that passes
# it has broken a bound anyway. (Memory is measured, not limited: Linux does not enforce
# RLIMIT_RSS, and an address-space cap would also bind the JVM a render starts.)
CHILD_CPU_S = 2 * int(sum(BOUNDS_S.values())) + 10


def _limit_child() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU's default action would dump core
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_S, CHILD_CPU_S + 5))


def _in_fork(text: str, render: bool) -> dict[str, Any]:
    """`_stages_in_child` in a forked child, so that the peak RSS is this spec's alone.

    The process's peak RSS never goes down: measured in the fuzz process itself, one heavy spec
    (or, under `make test`, any earlier test in the same pytest worker) would count against
    every spec after it. The child starts from the parent's current RSS (the loaded modules,
    as a CLI process has them): a fork server, so a spec pays no interpreter start or import
    (measured: the fork and the report cost ~10 ms of the parent's CPU per spec). The child
    reports its own peak (wait4's would include the tools a render runs, PlantUML's JVM); for a
    child that died (a signal, its rlimits: `_limit_child`) the parent takes wait4's.
    """
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report as JSON on the pipe, leave without cleanup handlers
        code = 0
        try:
            os.close(rd)
            _limit_child()
            payload = json.dumps(_stages_in_child(text, render)).encode()
            with os.fdopen(wr, "wb") as f:
                f.write(payload)
        except BaseException:  # noqa: BLE001 - reported by the parent as a harness crash
            code = 70
        finally:
            os._exit(code)
    os.close(wr)
    with os.fdopen(rd, "rb") as f:
        raw = f.read()
    _, status, usage = os.wait4(pid, 0)
    cpu_s = usage.ru_utime + usage.ru_stime
    if os.WIFSIGNALED(status) or not raw:
        why = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        crash = f"the stages' process died ({why}) after {cpu_s:.1f} CPU s"
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_s >= CHILD_CPU_S):
            crash += f": past its {CHILD_CPU_S} CPU s limit"
        return {"crash": crash, "rss_mib": usage.ru_maxrss / 1024, "cpu_s": cpu_s}
    data: dict[str, Any] = json.loads(raw)
    return {**data, "cpu_s": cpu_s}


@functools.lru_cache(maxsize=1)
def warm() -> None:
    """Load what every child would otherwise load again: the compiled simulation and fault-tree
    kernels (numba's disk cache), the rule registry. A CLI process pays this once too, outside
    the bounds of the stages measured here (as the in-process harness did)."""
    for name in ("ocr-reference", "rag-chat"):
        path = next(p for p in BASES if p.stem == name)
        api.check([path])
        api.capacity(path)


def run_valid(text: str, tally: ValidTally, render: bool) -> list[str]:
    """Every stage for one spec (in a child process); returns the problems (also written as a reproducer)."""
    problems: list[str] = []
    details: list[str] = []
    tally.inputs += 1
    warm()
    result = _in_fork(text, render)
    if "crash" in result:  # past the child's CPU limit: over the bounds; any other death: a crash
        over = "CPU s limit" in result["crash"]
        tally.over_bounds += over
        tally.tracebacks += not over
        problems.append(result["crash"])
    for stage, (problem, took, detail) in result.get("stages", {}).items():
        tally.stages[stage] += 1
        tally.slowest[stage] = max(tally.slowest[stage], took)
        if problem:
            tally.tracebacks += problem.startswith("traceback") or problem.startswith("rule crash")
            tally.over_bounds += not problem.startswith(("traceback", "rule crash"))
            problems.append(f"{stage}: {problem}")
            details.append(detail)
    rss = result.get("rss_mib", 0.0)
    tally.peak_rss_mib = max(tally.peak_rss_mib, rss)
    tally.tools_rss_mib = max(tally.tools_rss_mib, result.get("tools_rss_mib", 0.0))
    if rss > MAX_RSS_MIB:
        tally.over_bounds += 1
        problems.append(f"peak RSS {rss:.0f} MiB > {MAX_RSS_MIB} MiB")
    if problems:
        out = Outcome("; ".join(problems), 0.0, "\n".join(details))
        tally.failures.append(write_reproducer(text, out, "valid"))
    return problems
