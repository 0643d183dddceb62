"""Runs one input through `archkit.api.check` (load + every rule) under a time limit.

A failure is an exception, an input that gets no answer within the limit, or a diagnostic
that is not a located one-line error; each is written as a reproducer file (the input and
what went wrong) so that it can become a regression fixture.
"""

from __future__ import annotations

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


def run_one(text: str, limit_s: float = LIMIT_S) -> Outcome:
    """Check `text` as a spec file in-process; never raises."""
    path = _TMP / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    old = signal.signal(signal.SIGALRM, _alarm)
    start = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_REAL, limit_s)
        try:
            report = api.check([path])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.perf_counter() - start
        problem = _problem_in(report.diagnostics)
        if problem is None and took > limit_s:  # the alarm came while C code ran, or was late
            problem = f"answered in {took:.2f} s, over the {limit_s:g} s limit"
        return Outcome(problem, took, "")
    except _Timeout:
        return Outcome(f"no answer within {limit_s:g} s", time.perf_counter() - start)
    except BaseException as exc:  # noqa: BLE001 - every exception is the finding
        if isinstance(exc, KeyboardInterrupt):
            raise
        took = time.perf_counter() - start
        return Outcome(f"{type(exc).__name__}: {str(exc)[:200]}", took, traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


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
