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

from archkit.perf.latency import call_worst_ms
from archkit.spec.model import Call, Spec

# Amplification saturates here: past a million calls per request the number only says "storm",
# and a deep chain of retries would otherwise build integers of thousands of digits.
MAX_AMPLIFICATION = 1_000_000
# Ids shown of a long caller chain (the innermost ones); the rest is elided as "...".
MAX_CHAIN_SHOWN = 12


@dataclass
class CallBudget:
    """One call's worst case against its caller's budget (ms)."""

    call: Call
    worst_ms: float | None
    caller: Call | None  # the enclosing call, if nested
    budget_ms: float | None  # the caller's timeout, else the request deadline
    budget_source: str  # "call 'x' timeout" or "controlflow.timeout_ms"
    amplification: int  # Π(1 + attempts) from the outermost caller down to here, at most 10^6
    chain: list[str]  # outermost first; a chain over 12 calls starts with "..."


def _amplifications(calls: dict[str, Call]) -> dict[str, int]:
    """Π(1 + attempts) along each call's caller chain, each chain walked once (memoised), so a
    chain of n nested calls costs O(n), not O(n²); a caller cycle counts each member once."""
    amp: dict[str, int] = {}
    for cid in calls:
        walk: list[str] = []
        on_walk: set[str] = set()
        cur: str | None = cid
        while cur is not None and cur in calls and cur not in amp and cur not in on_walk:
            walk.append(cur)
            on_walk.add(cur)
            cur = calls[cur].caller
        if cur is not None and cur in on_walk:  # a cycle: its members all multiply once
            cyc = walk[walk.index(cur) :]
            prod = 1
            for c in cyc:
                prod = min(MAX_AMPLIFICATION, prod * _factor(calls[c]))
            for c in cyc:
                amp[c] = prod
            walk = walk[: walk.index(cur)]
        base = amp.get(cur, 1) if cur is not None else 1
        for c in reversed(walk):
            base = min(MAX_AMPLIFICATION, base * _factor(calls[c]))
            amp[c] = base
    return amp


def _factor(c: Call) -> int:
    return 1 + (c.retry.attempts if c.retry else 0)


def call_budgets(spec: Spec) -> list[CallBudget]:
    """Every call with its worst case, its caller's budget and its retry amplification."""
    calls: dict[str, Call] = {}
    for c in spec.controlflow.calls:
        calls.setdefault(c.id, c)
    amp = _amplifications(calls)
    deadline = spec.controlflow.timeout_ms
    out = []
    for c in spec.controlflow.calls:
        caller = calls.get(c.caller) if c.caller else None
        chain, seen, cur = [c.id], {c.id}, c
        while True:
            nxt = calls.get(cur.caller) if cur.caller else None
            if nxt is None or nxt.id in seen:
                break
            if len(chain) == MAX_CHAIN_SHOWN:
                chain.append("...")
                break
            seen.add(nxt.id)
            chain.append(nxt.id)
            cur = nxt
        if caller is not None:
            budget, src = caller.timeout_ms, f"call '{caller.id}' timeout"
        else:
            budget, src = deadline, "controlflow.timeout_ms"
        if calls[c.id] is c:
            amplification = amp[c.id]
        else:  # a second call with the same id (AK102): its own factor times its caller's chain
            above = amp.get(c.caller, 1) if c.caller and c.caller != c.id else 1
            amplification = min(MAX_AMPLIFICATION, _factor(c) * above)
        out.append(CallBudget(c, call_worst_ms(c), caller, budget, src, amplification, list(reversed(chain))))
    return out
