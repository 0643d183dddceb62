"""Retry amplification and nested timeouts of the control flow's calls.

- A call's worst case is (1 + attempts) × timeout + backoffs; it must fit in its caller's
  budget: the caller call's timeout (`Call.caller`) or, for a top-level call, the request
  deadline `controlflow.timeout_ms` (seed 000 §3.2: every call has a timeout and bounded
  retries; seed 004 §2.1: users refresh after 2 s, so late retries only add load).
- Amplification: when calls nest, each layer multiplies the attempts of the layers below:
  one user request can cost Π(1 + attemptsᵢ) calls to the innermost service, which is how
  a slow dependency turns into a retry storm.
"""

from __future__ import annotations

from dataclasses import dataclass

from archkit.analysis.latency import call_worst_ms
from archkit.spec.model import Call, Spec


@dataclass
class CallBudget:
    """One call's worst case against its caller's budget (ms)."""

    call: Call
    worst_ms: float | None
    caller: Call | None  # the enclosing call, if nested
    budget_ms: float | None  # the caller's timeout, else the request deadline
    budget_source: str  # "call 'x' timeout" or "controlflow.timeout_ms"
    amplification: int  # Π(1 + attempts) from the outermost caller down to here
    chain: list[str]


def call_budgets(spec: Spec) -> list[CallBudget]:
    """Every call with its worst case, its caller's budget and its retry amplification."""
    calls: dict[str, Call] = {}
    for c in spec.controlflow.calls:
        calls.setdefault(c.id, c)
    deadline = spec.controlflow.timeout_ms
    out = []
    for c in spec.controlflow.calls:
        caller = calls.get(c.caller) if c.caller else None
        chain, amp, seen, cur = [c.id], 1, {c.id}, c
        while cur is not None:
            amp *= 1 + (cur.retry.attempts if cur.retry else 0)
            nxt = calls.get(cur.caller) if cur.caller else None
            if nxt is None or nxt.id in seen:
                break
            seen.add(nxt.id)
            chain.append(nxt.id)
            cur = nxt
        if caller is not None:
            budget, src = caller.timeout_ms, f"call '{caller.id}' timeout"
        else:
            budget, src = deadline, "controlflow.timeout_ms"
        out.append(CallBudget(c, call_worst_ms(c), caller, budget, src, amp, list(reversed(chain))))
    return out
