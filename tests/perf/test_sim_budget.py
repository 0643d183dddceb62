"""Issue 28: the whole-pipeline simulation and the capacity knee search stop at a budget of work
(simulated events, the scans of processor sharing and least-request routing weighed in), and
say where they stopped and how to raise it."""

from __future__ import annotations

import math

import pytest
import yaml
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app
from archkit.perf.pipeline import SIM_BUDGET, knee_search, predict, prepare
from archkit.perf.pipesim import simulate_pipeline
from archkit.spec import load_text
from tests.conftest import OCR_SPEC, ROOT

REPLICAS_1024 = ROOT / "tests" / "perf" / "data" / "capacity-replicas-1024.yaml"


def _reference(**triton) -> str:
    doc = yaml.safe_load(OCR_SPEC.read_text(encoding="utf-8"))
    svc = next(s for s in doc["topology"]["services"] if s["id"] == "triton")
    svc.update(triton)
    return yaml.safe_dump(doc, sort_keys=False)


def _spec(text: str):
    res = load_text(text, "t.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_a_run_stops_at_its_work_budget_and_says_so():
    spec, lm = prepare(_spec(OCR_SPEC.read_text(encoding="utf-8")))
    full = simulate_pipeline(spec, lm, 2.0, requests=4000)
    assert not full.cut_short and full.completed + full.failed + full.degraded == 4000
    cut = simulate_pipeline(spec, lm, 2.0, requests=4000, max_work=full.work // 4)
    assert cut.cut_short
    # the loop checks before each event: it stops within one event's scans of the budget
    assert full.work // 4 <= cut.work <= full.work // 4 + 64
    assert cut.completed < full.completed


ONE_STAGE = """apiVersion: archkit/v1
metadata: {name: wide}
dataflow:
  stages:
    - id: infer
      kind: model
      service: triton
      model:
        name: m
        device: gpu
        batching: {max_batch_size: 1}
        service_time: [{batch_size: 1, compute_ms: 10}]
topology:
  node_pools: [{id: gpu, gpu: {model: H100, count: 1}}]
  services:
    - {id: triton, pool: gpu, replicas: 5000, routing: ROUTING, resources: {limits: {gpu: 1}}}
"""


def test_least_request_scans_over_many_replicas_count_as_work():
    """5,000 replicas: each least-request call reads 5,000 queue lengths, which random routing
    does not; the budget counts them (`reps >> 4` each, 64 to an event). By hand: 2,000 calls
    (one per request) x (5,000 >> 4 = 312) / 64 = 9,750 events more; at 2 req/s of 10 ms
    calls on 5,000 GPUs the other scans (active jobs) are the same few in both runs."""
    rnd, lr = (prepare(_spec(ONE_STAGE.replace("ROUTING", r))) for r in ("random", "least-request"))
    w_rnd = simulate_pipeline(*rnd, 2.0, requests=2000).work
    w_lr = simulate_pipeline(*lr, 2.0, requests=2000).work
    assert w_lr - w_rnd == pytest.approx(9_750, abs=40)


def test_the_knee_search_stops_with_its_bracket_when_the_budget_runs_out():
    spec = _spec(OCR_SPEC.read_text(encoding="utf-8"))
    full = knee_search(spec, requests=5000)
    assert full.note is None and full.runs == 9
    short = knee_search(spec, requests=5000, budget=full.work // 3)
    assert short.note is not None and "knee search" in short.note
    assert short.runs < full.runs and short.work <= full.work // 3 + 64
    lo, hi = short.bracket
    assert lo <= full.knee_rps <= hi  # the same bisection, stopped earlier: its bracket holds the knee
    assert short.knee_rps == lo


def test_the_reference_spec_fits_the_default_budget():
    pred = predict(_spec(OCR_SPEC.read_text(encoding="utf-8")), knee=True)
    assert pred.budget_note is None and 0 < pred.sim_work <= SIM_BUDGET
    assert math.isfinite(pred.simulated_knee_rps or math.nan)


def test_the_replicas_reproducer_answers_within_the_budget():
    """The fuzz reproducer of issue 28 (`replicas: 1024` on the reference's Triton service): a
    full answer, the simulated work within the default budget."""
    rep = api.capacity(REPLICAS_1024)
    assert not rep.diagnostics and rep.pipeline is not None
    assert rep.pipeline["sim_work"] <= SIM_BUDGET


def test_capacity_names_the_budget_and_how_to_raise_it(tmp_path):
    _load_commands()
    path = tmp_path / "lr.yaml"
    path.write_text(_reference(replicas=5000, routing="least-request"), encoding="utf-8")
    res = CliRunner().invoke(app, ["capacity", str(path)])
    assert res.exit_code in (0, 1), res.output
    warn = [ln for ln in res.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1 and warn[0].startswith(f"{path}: warning: the budget of 4,000,000 simulated events")
    assert "--sim-budget 16000000" in warn[0] and "between" in warn[0]
    assert "budget: the budget of 4,000,000" in res.stdout
    raised = CliRunner().invoke(app, ["capacity", str(path), "--sim-budget", "16000000", "-f", "json"])
    assert raised.exit_code in (0, 1) and "warning" not in raised.stderr
    assert '"budget_note": null' in raised.stdout
    assert CliRunner().invoke(app, ["capacity", str(path), "--sim-budget", "10"]).exit_code == 2


def test_a_sweep_shares_one_budget_over_its_rates():
    """`capacity --rate A:B:STEP`: the rates draw on one budget, lowest first (each rate had its own
    before, so 10 rates cost 10 budgets). A budget for about three of the ten rates stops the
    sweep there, says so, and keeps the rates it finished."""
    from archkit.perf.curve import sweep

    spec = _spec(OCR_SPEC.read_text(encoding="utf-8"))
    rates = [0.5 * i for i in range(1, 11)]
    full = sweep(spec, rates, requests=3000)
    assert full.budget_note is None and len(full.points) == 10
    per_rate = [predict(spec, rate_rps=r, requests=3000).sim_work for r in rates]
    assert full.sim_work == sum(per_rate)
    budget = sum(per_rate[:3]) + per_rate[3] // 2
    short = sweep(spec, rates, requests=3000, budget=budget)
    assert short.points == full.points[:3]
    assert short.sim_work <= budget + 64  # the loop checks before each event (64 units at most)
    assert short.budget_note is not None and "3 of 10 rates simulated" in short.budget_note
    assert f"at {rates[3]:g} req/s" in short.budget_note and "--sim-budget" in short.budget_note


def test_capacity_warns_when_the_sweep_runs_out():
    _load_commands()
    res = CliRunner().invoke(app, ["capacity", str(OCR_SPEC), "--rate", "0.5:5:0.5", "--sim-budget", "20000"])
    assert res.exit_code in (0, 1), res.output
    warn = [ln for ln in res.stderr.splitlines() if "the sweep spent its budget of 20,000" in ln]
    assert len(warn) == 1 and warn[0].startswith(f"{OCR_SPEC}: warning:")
    assert "budget: the sweep spent its budget of 20,000" in res.stdout
