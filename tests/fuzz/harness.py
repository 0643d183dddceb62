"""Runs one input through `archkit.api.check` (load + every rule) under a time limit.

A failure is an exception, an input that gets no answer within the limit, or a diagnostic
that is not a located one-line error; each is written as a reproducer file (the input and
what went wrong) so that it can become a regression fixture.
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from archkit import api

# Seconds one input may take: the bar is an answer within 2 s on this machine, alone.
LIMIT_S = 2.0
REPRODUCERS = Path(
    os.environ.get("ARCHKIT_FUZZ_OUT", Path(__file__).resolve().parents[2] / ".cache" / "fuzz")
)


class _Timeout(BaseException):
    """Not an Exception: code under test that catches Exception (the rule runner turns a rule's
    exception into a finding) must not swallow the time limit."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    # Re-armed: an exception raised while a __del__ or a GC callback runs is swallowed as
    # "unraisable" (seen once in a long run: an input ran 64 s past its limit), so fire again
    # until it lands; run_one clears the timer once the check has stopped.
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    raise _Timeout


@dataclass
class Outcome:
    """What one input did: `problem` is None when it got a clean answer in time."""

    problem: str | None
    seconds: float
    detail: str = ""


@dataclass
class Tally:
    """Counts over a fuzzing run and the reproducers written."""

    inputs: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    failures: list[Path] = field(default_factory=list)


_TMP = Path(tempfile.mkdtemp(prefix="archkit-fuzz-"))


def _problem_in(diags: list) -> str | None:
    for d in diags:
        if d.code == "AK199":  # the rule runner caught a rule's exception: still a crash
            return f"rule crash: {d.message[:300]!r}"
        if d.line < 1 or d.col < 1 or not d.code.startswith("AK") or not d.message:
            return f"unlocated diagnostic: {d!r}"[:500]
        if "\n" in d.message or "Traceback" in d.message:
            return f"multi-line diagnostic: {d.message[:300]!r}"
    return None


# The wall-clock net under the CPU bound: the machine is shared (load 8-20 on 2 cores), so a check's
# wall time measures the neighbours; a check that waits without computing still stops.
WALL_FACTOR = 12


def _cpu_alarm(signum: int, frame: FrameType | None) -> None:
    signal.setitimer(signal.ITIMER_PROF, 0.05)  # re-armed, as _alarm
    raise _Timeout


@functools.lru_cache(maxsize=1)
def warm() -> None:
    """Import and load the compiled kernels (numba's disk cache) once, outside any alarm: an alarm
    that lands inside numba's own first import leaves the module half made ("module 'numba' has no
    attribute 'core'" for every later input, seen under load in `make test`). A CLI process pays
    this once, before any spec is read."""
    root = Path(__file__).resolve().parents[2]
    api.check([root / "examples" / "rag-chat.yaml", root / "specs" / "ocr-reference.yaml"])


def run_one(text: str, limit_s: float = LIMIT_S) -> Outcome:
    """Check `text` as a spec file in-process; never raises.

    The bound is CPU time of this process (ITIMER_PROF), with a wall-clock net at WALL_FACTOR times
    it, as the schema-valid harness's: under `make test` two workers and other engineers' jobs
    share two cores, and a 2 s wall-clock bound failed inputs that took 0.5 CPU s."""
    warm()
    path = _TMP / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    old = signal.signal(signal.SIGALRM, _alarm)
    old_prof = signal.signal(signal.SIGPROF, _cpu_alarm)
    start = time.process_time()
    try:
        signal.setitimer(signal.ITIMER_PROF, limit_s)
        signal.setitimer(signal.ITIMER_REAL, limit_s * WALL_FACTOR)
        try:
            report = api.check([path])
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.process_time() - start
        problem = _problem_in(report.diagnostics)
        if problem is None and took > limit_s:  # the alarm came while C code ran, or was late
            problem = f"answered in {took:.2f} CPU s, over the {limit_s:g} s limit"
        return Outcome(problem, took, "")
    except _Timeout:
        return Outcome(f"no answer within {limit_s:g} CPU s", time.process_time() - start)
    except BaseException as exc:  # noqa: BLE001 - every exception is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        took = time.process_time() - start
        return Outcome(f"{type(exc).__name__}: {str(exc)[:200]}", took, traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        signal.signal(signal.SIGPROF, old_prof)


def judge(text: str, tally: Tally | None = None, family: str = "fuzz") -> Outcome:
    """Run one input; a timeout is retried once (the machine is shared), then recorded."""
    out = run_one(text)
    if out.problem and out.problem.startswith(("no answer", "answered in")):
        out = run_one(text)  # the machine is shared: a slow answer must be slow twice to count
    if tally is not None:
        tally.inputs += 1
        tally.seconds += out.seconds
        tally.slowest = max(tally.slowest, out.seconds)
        if out.problem:
            tally.failures.append(write_reproducer(text, out, family))
    return out


def write_reproducer(text: str, out: Outcome, family: str) -> Path:
    """`<family>-<sha>.yaml` (the input) and `.txt` (what happened) under REPRODUCERS."""
    REPRODUCERS.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    base = REPRODUCERS / f"{family}-{sha}"
    base.with_suffix(".yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    base.with_suffix(".txt").write_text(f"{out.problem}\n{out.seconds:.3f} s\n{out.detail}", encoding="utf-8")
    return base.with_suffix(".yaml")
