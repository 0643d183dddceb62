"""Issue 28: the refusal-cost rounds of one pipeline simulation share its one work budget.

A spec whose refusals cost processor time runs the simulation up to `_REFUSAL_ROUNDS` times (each
round with the cores the previous round's refusals left). Each round used to get the whole budget
again, so one `capacity` run could do four budgets' work. The rounds' work is counted here round by
round (a spy on the event loop) and added up by hand against what the simulation reports."""

from __future__ import annotations

from typing import Any

import pytest

from archkit.perf import pipesim
from archkit.perf.pipeline import predict
from archkit.perf.resources import load_model
from archkit.spec import load_text
from tests.perf.test_limits import REFUSAL_COST

RATE = 50.0  # req/s on the gateway's one core: ~90 % refused (test_limits' hand computation)
REQUESTS = 4000


@pytest.fixture
def rounds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Each event-loop call's (work done, budget given, requests left unanswered), in order."""
    seen: list[tuple[int, int, int]] = []
    real = pipesim._loop

    def spy(*a: Any, **kw: Any) -> Any:
        loop = real(*a, **kw)

        def counted(*args: Any) -> Any:
            out = loop(*args)
            seen.append((int(out[4]), int(args[-1]), int((out[1] == 0).sum())))
            return out

        return counted

    monkeypatch.setattr(pipesim, "_loop", spy)
    return seen


def _spec():
    spec = load_text(REFUSAL_COST, "refusals.yaml").spec
    assert spec is not None
    return spec, load_model(spec)


def test_the_rounds_work_adds_up_and_each_round_gets_what_the_earlier_ones_left(rounds):
    spec, lm = _spec()
    full = pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS)
    assert len(rounds) == pipesim._REFUSAL_ROUNDS  # the refusals' load moved in every round
    works = [w for w, _, _ in rounds]
    assert full.work == sum(works)  # all four rounds, not the last one's alone
    budget = pipesim._EVENTS_PER_REQUEST * REQUESTS  # the default: 1,600,000
    given = [b for _, b, _ in rounds]
    assert given == [budget - sum(works[:i]) for i in range(len(works))]
    assert not full.cut_short and full.rounds_cut == 0


def test_a_round_the_budget_cuts_short_leaves_the_previous_rounds_answer(rounds):
    """By hand: W1 (round 1, complete) plus half of round 2's W2 as the budget. Round 2 gets
    budget − W1 = W2 / 2, stops within one event's scans of it, and its half-answered run is
    dropped: the result is round 1's, every request answered, the work W1 + (budget − W1) + the
    last event's overshoot, and the prediction's warning names the round and `--sim-budget`."""
    spec, lm = _spec()
    pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS)
    w1, w2 = rounds[0][0], rounds[1][0]
    # a budget of W1: round 1 spends it all, round 2 starts with 1 event and is dropped at once
    first_round = pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS, max_work=w1)
    assert not first_round.cut_short and first_round.rounds_cut == 2 and w1 < first_round.work <= w1 + 64
    rounds.clear()

    budget = w1 + w2 // 2
    cut = pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS, max_work=budget)
    assert [b for _, b, _ in rounds] == [budget, budget - w1]
    assert rounds[0][2] == 0 and rounds[1][2] > 0  # round 2 left requests unanswered
    assert cut.rounds_cut == 2 and not cut.cut_short
    assert budget <= cut.work <= budget + 64 and cut.work == w1 + rounds[1][0]
    # round 1's answer, byte for byte: the same counts and percentiles as a run of round 1 alone
    assert (cut.completed, cut.shed, cut.failed, cut.p99_ms) == (
        first_round.completed,
        first_round.shed,
        first_round.failed,
        first_round.p99_ms,
    )

    pred = predict(spec, rate_rps=RATE, requests=REQUESTS, knee=True, budget=budget)
    assert pred.sim_work == cut.work and pred.simulated_knee_rps is None  # no knee search after it
    assert pred.budget_note is not None
    assert "round 2 of the refusals' cost" in pred.budget_note
    assert f"--sim-budget {4 * budget}" in pred.budget_note and "no knee search" in pred.budget_note


def test_a_first_round_cut_short_runs_no_further_round(rounds):
    spec, lm = _spec()
    pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS)
    half = rounds[0][0] // 2
    rounds.clear()
    cut = pipesim.simulate_pipeline(spec, lm, RATE, requests=REQUESTS, max_work=half)
    assert len(rounds) == 1 and cut.cut_short and cut.rounds_cut == 0
    assert half <= cut.work <= half + 64
