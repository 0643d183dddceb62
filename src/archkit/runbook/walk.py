"""Plan and walk a fault tree's checks: run each command as written, compare, stop once the failure is explained.

Seed 000 §3.4: at 3 a.m. the on-call engineer walks the tree's checks in order and finds the
root cause in five minutes. `plan` gives the order (importance per second of check, see
`archkit.faulttree.ranked_events`); `walk` runs the commands one by one.

Each command is the spec's string, run by `/bin/sh -c` exactly as written: nothing from any
other input is interpolated into it. A check is judged healthy when its combined output
(stdout then stderr, as a terminal shows it) contains `expect`, matches `expect_regex`, and
its exit code equals `expect_exit_code` — each only where declared. A mismatch, or a check
that runs past its timeout, confirms the event (see `BasicEvent`). The walk stops when the
confirmed events complete a minimal cut set (see `walk`).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from archkit.errors import InputError
from archkit.faulttree.observe import Observation, observe
from archkit.plans.runbook import runbook_order
from archkit.spec.model import BasicEvent, FaultTree, Spec

OUTPUT_LIMIT = 4000  # characters of a check's output kept in the report


class RunbookError(InputError):
    """The runbook cannot be planned: unknown tree, or a spec that does not load."""


@dataclass
class Step:
    """One check of the plan, in walking order."""

    n: int
    event: str
    label: str
    command: str | None
    expect: str | None
    expect_regex: str | None
    expect_exit_code: int | None
    timeout_s: float
    mismatch_means: str | None
    remedy: str | None
    probability: float | None = None
    importance: float | None = None

    @property
    def judgeable(self) -> bool:
        return self.expect is not None or self.expect_regex is not None or self.expect_exit_code is not None

    def expectation(self) -> str:
        parts = []
        if self.expect is not None:
            parts.append(f"output contains {self.expect!r}")
        if self.expect_regex is not None:
            parts.append(f"output matches /{self.expect_regex}/")
        if self.expect_exit_code is not None:
            parts.append(f"exit code {self.expect_exit_code}")
        return "; ".join(parts) or "nothing declared"


@dataclass
class CheckResult:
    """What running one check gave, and the verdict."""

    event: str
    status: str  # "healthy", "cause", "unjudged", "skipped"
    reason: str
    exit_code: int | None = None
    output: str = ""
    duration_s: float = 0.0
    timed_out: bool = False


@dataclass
class RunbookReport:
    """The plan of one tree and, after `--run`, what each check found."""

    tree: str
    label: str
    steps: list[Step]
    ran: bool = False
    results: list[CheckResult] = field(default_factory=list)
    cause: str | None = None
    escalation: str | None = None
    note: str | None = None
    observation: Observation | None = None  # after --run: what the checks established

    @property
    def cause_step(self) -> Step | None:
        return next((s for s in self.steps if s.event == self.cause), None)

    def to_dict(self) -> dict:
        return {
            "tree": self.tree,
            "label": self.label,
            "ran": self.ran,
            "cause": self.cause,
            "remedy": self.cause_step.remedy if self.cause_step else None,
            "escalation": self.escalation,
            "note": self.note,
            "steps": [asdict(s) for s in self.steps],
            "results": [asdict(r) for r in self.results],
            "observation": self.observation.to_dict() if self.observation else None,
        }


def _tree(spec: Spec, tree_id: str | None) -> FaultTree:
    trees = {t.id: t for t in spec.faulttrees}
    if not trees:
        raise RunbookError("the spec declares no fault trees")
    if tree_id is None:
        if len(trees) == 1:
            return next(iter(trees.values()))
        raise RunbookError("the spec has several fault trees; choose one with --tree: " + ", ".join(trees))
    if tree_id not in trees:
        raise RunbookError(f"no fault tree {tree_id!r}; the spec has: {', '.join(trees)}")
    return trees[tree_id]


def plan(spec: Spec, tree_id: str | None = None, timeout_s: float | None = None) -> RunbookReport:
    """The tree's checks in walking order; runs nothing. `timeout_s` overrides every check's timeout."""
    tree = _tree(spec, tree_id)
    order = runbook_order(tree)  # the same order the generated runbook pages show
    events: list[BasicEvent] = list(order.events)
    note = f"{order.error}; checks are in document order" if order.error else None
    probs = order.analysis.event_probabilities if order.analysis else {}
    fv = order.analysis.fussell_vesely if order.analysis else {}
    steps = [
        Step(
            i,
            e.id,
            e.label or e.id,
            e.check,
            e.expect,
            e.expect_regex,
            e.expect_exit_code,
            float(timeout_s if timeout_s is not None else e.timeout_s),
            e.mismatch_means,
            e.remedy,
            probs.get(e.id),
            fv.get(e.id),
        )
        for i, e in enumerate(events, 1)
    ]
    owners = ", ".join(spec.metadata.owners)
    escalation = tree.escalation or (f"escalate to {owners}" if owners else "escalate to the service owners")
    return RunbookReport(tree.id, tree.label or tree.id, steps, escalation=escalation, note=note)


def judge(step: Step, output: str, exit_code: int | None, timed_out: bool) -> tuple[bool, str]:
    """(healthy, reason): every declared expectation must hold; a timeout never is healthy."""
    if timed_out:
        return False, f"timed out after {step.timeout_s:g} s"
    if step.expect_exit_code is not None and exit_code != step.expect_exit_code:
        return False, f"exit code {exit_code}, expected {step.expect_exit_code}"
    if step.expect is not None and step.expect not in output:
        return False, f"output does not contain {step.expect!r}"
    if step.expect_regex is not None:
        try:
            if re.search(step.expect_regex, output, re.MULTILINE) is None:
                return False, f"output does not match /{step.expect_regex}/"
        except re.error as exc:
            raise RunbookError(
                f"event '{step.event}': expect_regex is not a valid regular expression: {exc}"
            ) from None
    return True, "matches " + step.expectation()


def run_check(command: str, timeout_s: float) -> tuple[int | None, str, float, bool]:
    """Run `command` with /bin/sh exactly as written; (exit code, stdout+stderr, seconds, timed out).

    The command runs in its own process group so a timeout kills its children too (a shell
    pipeline would otherwise keep the pipes open).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:  # Ctrl-C: the check runs in its own session, so stop it before leaving
        _kill_group(proc.pid)
        proc.wait()
        raise
    text = out.decode("utf-8", "replace") + err.decode("utf-8", "replace")
    return (None if timed_out else proc.returncode), text, time.monotonic() - start, timed_out


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def walk(
    spec: Spec,
    tree_id: str | None = None,
    timeout_s: float | None = None,
    on_start: Callable[[Step, int], None] | None = None,
    on_result: Callable[[Step, CheckResult], None] | None = None,
) -> RunbookReport:
    """Run the checks until the failure is explained, re-ranking what is left after each one.

    A confirmed event explains the top event only when it completes a minimal cut set (one
    input of an AND gate does not); until then the walk goes on with the remaining checks
    ranked on the tree conditioned on what was observed (`archkit.faulttree.observe`). A
    tree that cannot be analysed stops at the first confirmed event, as before.

    `on_start(step, total)` is called before each command runs (the CLI prints the command
    there); `on_result(step, result)` after it.
    """
    report = plan(spec, tree_id, timeout_s)
    report.ran = True
    tree = _tree(spec, tree_id)
    analysis = runbook_order(tree).analysis
    total = len(report.steps)
    remaining = list(report.steps)
    observed: dict[str, bool] = {}
    while remaining:
        step = remaining.pop(0)
        if on_start:
            on_start(step, total)
        if not step.command:
            res = CheckResult(step.event, "skipped", "no check command declared")
        else:
            code, output, secs, timed_out = run_check(step.command, step.timeout_s)
            if step.judgeable or timed_out:
                healthy, reason = judge(step, output, code, timed_out)
                status = "healthy" if healthy else "cause"
            else:
                status, reason = "unjudged", "no expectation declared: read the output"
            res = CheckResult(
                step.event, status, reason, code, output[:OUTPUT_LIMIT], round(secs, 3), timed_out
            )
        report.results.append(res)
        if on_result:
            on_result(step, res)
        if res.status in ("cause", "healthy"):
            observed[step.event] = res.status == "cause"
        if res.status == "cause" and report.cause is None:
            report.cause = step.event
        if analysis is None:
            if res.status == "cause":
                break
            continue
        report.observation = observe(tree, observed, analysis)
        if report.observation.explained:
            break
        rank = {e: i for i, e in enumerate(report.observation.next_checks)}
        remaining.sort(key=lambda s: rank.get(s.event, len(rank)))
    return report
