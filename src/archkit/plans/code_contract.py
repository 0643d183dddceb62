"""The control flow as a code contract (seed 000 §3.2): one function per decision and call.

Seed 000 §3.2 asks that each decision node of the control-flow diagram be one function named after
it whose first line sets its timeout, so the diagram and the code cannot drift apart. This plan
says, per node, which function that is and what it must set: its timeout, its retries and backoff,
its circuit breaker, its fallback (the node taken on failure) and, for a decision, its branches.
The `stubs` generator renders it as Python; `archkit verify --code` reads Python back with `ast`
and compares it with the same plan.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from archkit.spec.model import Call, Decision, Spec


@dataclass(frozen=True)
class Breaker:
    error_rate_threshold: float
    window_s: float
    open_s: float
    min_requests: int


@dataclass(frozen=True)
class FunctionContract:
    """What the function of one control-flow node must do."""

    node_id: str
    function: str
    kind: str  # "decision" or "call"
    timeout_ms: float | None
    retries: int
    backoff_ms: float
    backoff_multiplier: float
    jitter: bool
    breaker: Breaker | None
    fallback: str | None  # the control-flow node taken when the node fails (on_failure)
    next: str | None  # a call's next node on success
    branches: tuple[tuple[str, str], ...]  # a decision's (outcome, next node)
    target: str | None
    label: str
    node: Decision | Call


def function_name(node_id: str) -> str:
    """The Python function named after a node id: 'call-ocr' -> call_ocr, '2fa' -> n_2fa."""
    name = re.sub(r"\W", "_", node_id)
    if not name or name[0].isdigit():
        name = "n_" + name
    return name + "_" if keyword.iskeyword(name) else name


def _unique(names: list[str]) -> list[str]:
    """Function names made unique in order: ids 'call-a' and 'call_a' become call_a and call_a_2."""
    seen: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name}_{n}"
        seen.add(candidate)
        out.append(candidate)
    return out


def code_contract(spec: Spec) -> tuple[FunctionContract, ...]:
    """One contract per decision and call of the control flow, in document order."""
    cf = spec.controlflow
    ids = [d.id for d in cf.decisions] + [c.id for c in cf.calls]
    names = iter(_unique([function_name(i) for i in ids]))
    out: list[FunctionContract] = []
    for d in spec.controlflow.decisions:
        out.append(
            FunctionContract(
                d.id,
                next(names),
                "decision",
                d.timeout_ms,
                0,
                0.0,
                1.0,
                False,
                None,
                d.on_failure,
                None,
                tuple((b.when, b.next) for b in d.branches),
                None,
                d.label or d.criterion or d.id,
                d,
            )
        )
    for c in spec.controlflow.calls:
        r, cb = c.retry, c.circuit_breaker
        out.append(
            FunctionContract(
                c.id,
                next(names),
                "call",
                c.timeout_ms,
                r.attempts if r else 0,
                r.backoff_ms if r else 0.0,
                r.backoff_multiplier if r else 1.0,
                r.jitter if r else False,
                Breaker(cb.error_rate_threshold, cb.window_s, cb.open_s, cb.min_requests) if cb else None,
                c.on_failure,
                c.next,
                (),
                c.target,
                c.label or f"call {c.target}",
                c,
            )
        )
    return tuple(out)
