"""Issue 28: schema-valid fuzz reproducers (tests/fuzz/reproducers/) that pass now, each checked by
counting what it used to blow up (steps, bytes, work), not by timing it."""

from __future__ import annotations

from pathlib import Path

from archkit import api
from archkit.plans.stress import MAX_STRESS_STEPS, stress_schedule

REPRODUCERS = Path(__file__).parent / "reproducers"


def test_a_one_nanosecond_stress_step_gives_a_bounded_schedule_and_scripts() -> None:
    """Batch 5 (2026-12-03): examples/industrial-inspection.yaml with its stress level at
    `step_duration_s: 1e-9` up to `max_rps: 9999999.99` by 10 req/s steps: a million steps, which
    k6's and locust's generators wrote out as 52 MB and 22 MB scripts (peak RSS 822 MiB, past
    the 512 MiB bound). The schedule stops at MAX_STRESS_STEPS; by hand: (9,999,999.99 - 10) / 10
    + 1 rate steps and 240 s / 1 ns time steps, both far above it."""
    path = REPRODUCERS / "valid-industrial-stress-step-1ns.yaml"
    spec = api.load(path).spec
    assert spec is not None and spec.loadtest is not None
    level = next(lv for lv in spec.loadtest.levels if lv.kind == "stress")
    steps = stress_schedule(level, spec.budgets.throughput_rps)
    assert len(steps) == MAX_STRESS_STEPS
    assert steps[1][2] - steps[0][2] == 10.0 and steps[-1][2] == 10.0 + 10 * (MAX_STRESS_STEPS - 1)
    files, _ = api.generate(spec, path.name, only=["k6", "locust"], formats=())
    # the unmodified example's scripts are ~20 kB; a thousand steps add ~40 bytes each
    assert 0 < max(len(v) for v in files.values()) < 400_000, {k: len(v) for k, v in files.items()}


def test_a_million_items_per_call_is_refused_at_its_line_and_the_largest_allowed_is_bounded() -> None:
    """Batch 4 (2026-12-03): specs/ocr-reference.yaml with the recogniser's `items_per_call:
    1000000` (no schema maximum then): `capacity` took 30.8 CPU s, building 1,000,001-entry batch
    tables (`target_batch` counts a batch in items: a whole call at least) for each of its ten
    simulations. The schema now stops it at MAX_BATCH (Triton refuses a request larger than a
    batch), with the field's line; at that maximum the tables have MAX_BATCH + 1 entries."""
    from archkit.perf.pipesim import compile_steps
    from archkit.perf.resources import load_model
    from archkit.spec import load_text
    from archkit.spec.base import MAX_BATCH

    path = REPRODUCERS / "valid-ocr-reference-items-per-call-1e6.yaml"
    res = api.load(path)
    assert res.spec is None
    errors = [d for d in res.diagnostics if d.code == "AK101"]
    assert len(errors) == 1 and errors[0].line == 141 and "items_per_call" in errors[0].text()
    text = path.read_text(encoding="utf-8").replace("items_per_call: 1000000", f"items_per_call: {MAX_BATCH}")
    spec = load_text(text, "t.yaml").spec
    assert spec is not None
    steps, _, _ = compile_steps(spec, load_model(spec))
    assert len(steps["recognise"].batch_s) == MAX_BATCH + 1


def test_the_1e_9_token_prompt_reproducer_spends_one_budget_for_the_whole_capacity_run() -> None:
    """Batch 6 (2026-12-03): examples/rag-chat.yaml with the prompt's `mean_tokens: 1e-9`, a call's
    `timeout_ms: 1e-9` and `user_ttft_p99_ms: 1e-9`: `capacity` past 5 CPU s twice (5.2 in the CLI).
    Where the time went (cProfile and a count of each simulation's work, 21:00 UTC): the pipeline's
    prediction and knee search spent their whole budget of 4,000,000 events (its co-simulated
    engines 35.9 M units of it; the knee search ran out in run 5, ~2.3 CPU s), and the LLM analysis
    then spent 41.6 M units, 2.08 M events' worth, of a budget of its own (~1.0 CPU s): ~6.1 M events
    in all, half as much again as the budget stands for. Now the run has one budget: the prediction
    at the design rate, then the LLM analysis, then the knee search with what they left, which
    stops early and says so at the LLM stage's `llm` line, naming both shares and the flag."""
    from archkit.cli.cmd_capacity import _budget_warnings
    from archkit.perf.llm.analysis import WORK_PER_EVENT
    from archkit.perf.pipeline import SIM_BUDGET

    path = REPRODUCERS / "valid-rag-chat-prompt-1e-9-tokens.yaml"
    rep = api.capacity(path)
    assert rep.pipeline is not None
    pipeline, llm = rep.pipeline["sim_work"], rep.pipeline["llm_sim_work"]
    # each simulation stops within one event (an engine iteration's units) of what it was given
    assert llm > 0 and pipeline + llm <= SIM_BUDGET + 64 + WORK_PER_EVENT
    (row,) = rep.llm
    assert row["budget_note"] is None  # the LLM analysis had what it needed: its rows are whole
    note = rep.pipeline["budget_note"]
    assert f"the LLM analysis's simulations spent {llm:,} of them" in note, note
    assert "ran out in run" in note and "--sim-budget 16000000" in note, note
    (line,) = _budget_warnings(path, rep)
    assert line.startswith(f"{path}:47:7: warning: the budget of 4,000,000 simulated events"), line
