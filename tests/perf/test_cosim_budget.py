"""Issue 28: a pipeline's co-simulated LLM engines spend the pipeline's `--sim-budget`.

The co-simulation (`pipesim._cosimulate`) runs one engine per replica each pass; those runs were
charged to no budget (`valid-rag-chat-replicas-4999.yaml`: 49,070 engine runs, 320 M units, ~17 s
of `capacity`). Now `ServiceModel.visits` gets what the first pass left, the engines share it
(`sim.per_request`, each run charged `RUN_OVERHEAD_WORK` besides its iterations), the second pass
gets the rest, and a replica the budget never reached leaves its visits unanswered: the run is cut
short and says so, its stage latency is never 0. Tested by counting the engines' work, not time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from archkit.perf.llm import sim, sim_kernel
from archkit.perf.llm.analysis import WORK_PER_EVENT
from archkit.perf.pipeline import SIM_BUDGET, predict, prepare
from archkit.perf.pipesim import simulate_pipeline
from archkit.spec import load_file
from tests.conftest import ROOT

REPRODUCERS = ROOT / "tests" / "fuzz" / "reproducers"
RAG = ROOT / "examples" / "rag-chat.yaml"
# How far past its budget a run may stop: the loop checks before each event (one event's scans,
# 64), and the engine run that spends the rest stops within an iteration, its overhead charged
# after it (RUN_OVERHEAD_WORK + an iteration of 2 sequences, in events, rounded up)
SLACK = 64 + -(-(sim.RUN_OVERHEAD_WORK + sim_kernel.ITERATION_WORK + 2) // WORK_PER_EVENT)


def _spec(path):
    res = load_file(path)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


@pytest.fixture
def engine_work(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every engine run's work (units), as the kernel counted it: a spy around the real `simulate`."""
    seen: list[int] = []
    real = sim.simulate

    def spy(*a, **k):
        run = real(*a, **k)
        seen.append(run.work)
        return run

    monkeypatch.setattr(sim, "simulate", spy)
    return seen


def test_engines_share_the_budget_and_a_replica_never_run_is_unanswered(engine_work) -> None:
    """rag-chat's engine over 50 replicas, 400 requests, a budget of ~10 runs: the runs stop at
    the budget (each charged its work plus RUN_OVERHEAD_WORK), every request of a replica after
    that is unanswered (NaN, `answered` False), never answered in 0 s."""
    spec = _spec(RAG)
    st = next(s for s in spec.dataflow.stages if s.llm is not None)
    from archkit.perf.llm.analysis import device_of
    from archkit.perf.llm.model import replica

    assert st.llm is not None
    rep = replica(st.llm, device_of(spec, st))
    req = sim.for_arrivals(st.llm.workload, np.cumsum(np.full(400, 0.1)), seed=3)
    full = sim.per_request(rep, req, 50, seed=3)
    assert full.answered.all() and full.cut == 0 and full.replicas == len(engine_work)
    assert full.work == sum(engine_work) + sim.RUN_OVERHEAD_WORK * len(engine_work)
    engine_work.clear()
    budget = full.work // 5
    cut = sim.per_request(rep, req, 50, seed=3, max_work=budget)
    # the budget is checked before each run, and a run stops within its limit: by hand, at most
    # one run's overhead past it
    assert cut.work == sum(engine_work) + sim.RUN_OVERHEAD_WORK * len(engine_work)
    assert budget <= cut.work <= budget + sim.RUN_OVERHEAD_WORK + 64
    assert len(engine_work) < full.replicas and cut.cut >= full.replicas - len(engine_work)
    never = ~cut.answered
    assert never.sum() > 0 and np.isnan(cut.e2e_s[never]).all()
    # a request of the engine that stopped may have had its first token; none is given 0 s
    assert not (cut.ttft_s[never] == 0).any()
    # what was answered is what the unlimited run answered (the same engines, the same draws)
    ok = cut.answered
    assert np.array_equal(cut.e2e_s[ok], full.e2e_s[ok])


def test_the_replicas_reproducer_spends_the_pipelines_budget(engine_work) -> None:
    """`valid-rag-chat-replicas-4999.yaml`: `predict` with its knee search. Before, its engines
    ran 49,070 times (320 M units, ~4x the pipeline's whole budget of 4 M events x WORK_PER_EVENT)
    beside it. Now all the engines' work, their runs' overhead included, is inside the budget, the
    prediction spends at most the budget (plus SLACK), and the note names the stage
    and the flag."""
    pred = predict(_spec(REPRODUCERS / "valid-rag-chat-replicas-4999.yaml"), knee=True)
    units = sum(engine_work) + sim.RUN_OVERHEAD_WORK * len(engine_work)
    assert units <= SIM_BUDGET * WORK_PER_EVENT
    assert pred.sim_work <= SIM_BUDGET + SLACK
    assert math.ceil(units / WORK_PER_EVENT) <= pred.sim_work
    note = pred.budget_note or ""
    assert "4,000,000 simulated events" in note and "--sim-budget 16000000" in note, note
    assert "stage 'generate'" in note and "never ran" in note, note


def test_a_cut_short_cosimulation_reports_no_zero_latency() -> None:
    """The same spec, one run at the design rate, a budget the first pass leaves ~1 M events of:
    the engines of the replicas reached run, the others never do. The result is cut short, names
    what was cut, and the LLM stage's latencies are those of the visits answered (none 0 s)."""
    spec, lm = prepare(_spec(REPRODUCERS / "valid-rag-chat-replicas-4999.yaml"))
    first = simulate_pipeline(spec, lm, 12.0, requests=4000, max_work=1)  # the first pass alone
    assert first.cut_short
    run = simulate_pipeline(spec, lm, 12.0, requests=4000, max_work=1_000_000)
    assert run.cut_short and run.cut_in is not None and "never ran" in run.cut_in
    assert run.work <= 1_000_000 + SLACK
    llm = next(s for s in run.stages if s.stage == "generate")
    assert 0 < llm.visits < 4000 and llm.p50_ms > 0
    assert run.completed < run.requests


def test_an_ordinary_llm_spec_fits_with_its_engines_counted(engine_work) -> None:
    """examples/rag-chat.yaml: its prediction spends well under the budget with the engines'
    work counted (so its numbers are those of an unlimited run: no note)."""
    pred = predict(_spec(RAG), knee=True)
    units = sum(engine_work) + sim.RUN_OVERHEAD_WORK * len(engine_work)
    assert pred.budget_note is None and units > 0
    assert math.ceil(units / WORK_PER_EVENT) < pred.sim_work <= SIM_BUDGET // 2


def test_the_large_gpu_reproducer_spends_the_pipelines_budget(engine_work) -> None:
    """`valid-rag-chat-gpu-4096gb.yaml` (batch 4: rag-chat with `gpu.memory_gb: 4096`, a million
    prefix groups, retrieval at 0 replicas; `capacity` past 5 CPU s twice): its co-simulation's
    engines spent 131 M units in 20 runs (6.6 M events' worth, 1.6 times the pipeline's whole
    budget) beside the pipeline's 3.4 M events. Now the two together stay within the budget."""
    pred = predict(_spec(REPRODUCERS / "valid-rag-chat-gpu-4096gb.yaml"), knee=True)
    units = sum(engine_work) + sim.RUN_OVERHEAD_WORK * len(engine_work)
    assert 0 < units <= SIM_BUDGET * WORK_PER_EVENT
    assert math.ceil(units / WORK_PER_EVENT) <= pred.sim_work <= SIM_BUDGET + SLACK
