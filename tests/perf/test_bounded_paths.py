"""Latency paths and retry chains do bounded work whatever the size of the control flow."""

from __future__ import annotations

import pytest

from archkit.perf import latency, retry
from archkit.spec.model import Call, Retry, Spec


def _spec(controlflow: dict) -> Spec:
    return Spec.model_validate(
        {"apiVersion": "archkit/v1", "metadata": {"name": "t"}, "controlflow": controlflow}
    )


def test_exponentially_many_control_paths_stop_at_the_work_bound():
    """A ladder of 2,000 decisions, each with two calls that lead to the next: 2^2000 paths of
    6,001 nodes; the walk stops at its work bound and says so."""
    n = 2000
    decisions, calls = [], []
    for i in range(n):
        decisions.append(
            {"id": f"d{i}", "branches": [{"when": "a", "next": f"a{i}"}, {"when": "b", "next": f"b{i}"}]}
        )
        calls += [{"id": f"{x}{i}", "target": "s", "next": f"d{i + 1}"} for x in "ab"]
    spec = _spec({"start": "d0", "decisions": decisions, "calls": calls, "terminals": [{"id": f"d{n}"}]})
    paths = latency.control_paths(spec)
    assert paths.truncated
    assert 1 < len(paths) < 2000  # the work bound stopped it (each path has 4,001 nodes), not the count
    assert all(len(p.nodes) == 2 * n + 1 and p.terminal == f"d{n}" for p in paths)


def test_a_small_control_flow_is_not_truncated():
    spec = _spec(
        {"start": "c", "calls": [{"id": "c", "target": "x", "next": "t"}], "terminals": [{"id": "t"}]}
    )
    paths = latency.control_paths(spec)
    assert not paths.truncated and [p.nodes for p in paths] == [["c", "t"]]


@pytest.mark.parametrize("attempts,mult", [(0, 1.0), (3, 1.0), (5, 2.0), (100, 10.0)])
def test_worst_case_backoff_closed_form_matches_the_sum(attempts, mult):
    call = Call(
        id="c",
        target="x",
        timeout_ms=100,
        retry=Retry(attempts=attempts, backoff_ms=10, backoff_multiplier=mult),
    )
    step, total = 10.0, 0.0
    for _ in range(attempts):
        total += step
        step *= mult
    assert latency.call_worst_ms(call) == pytest.approx((1 + attempts) * 100 + total, rel=1e-12)


def test_deep_retry_chain_saturates_and_elides():
    """3,000 nested calls with 100 retries each: 101^3000 would be a 6,000-digit integer
    (which Python refuses to format); the amplification saturates and the chain is elided."""
    n = 3000
    calls = [
        {
            "id": f"c{i}",
            "target": "x",
            "caller": f"c{i - 1}" if i else None,
            "retry": {"attempts": 100, "backoff_ms": 1},
        }
        for i in range(n)
    ]
    budgets = {cb.call.id: cb for cb in retry.call_budgets(_spec({"calls": calls}))}
    inner = budgets[f"c{n - 1}"]
    assert inner.amplification == retry.MAX_AMPLIFICATION
    assert inner.chain[0] == "..." and inner.chain[-1] == f"c{n - 1}" and len(inner.chain) == 13
    assert budgets["c1"].amplification == 101 * 101 and budgets["c1"].chain == ["c0", "c1"]


def test_caller_cycle_counts_each_member_once():
    calls = [
        {"id": "a", "target": "x", "caller": "b", "retry": {"attempts": 1}},
        {"id": "b", "target": "x", "caller": "a", "retry": {"attempts": 2}},
        {"id": "c", "target": "x", "caller": "a"},
    ]
    amp = {cb.call.id: cb.amplification for cb in retry.call_budgets(_spec({"calls": calls}))}
    assert amp == {"a": 6, "b": 6, "c": 6}
