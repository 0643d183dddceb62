"""Issue 28: a stress level's schedule stops at MAX_STRESS_STEPS, and AK117 says so before any
load test or script is made. `steps_asked` (the closed form AK117 reads) agrees with the
schedule itself wherever the schedule is not cut, and the step AK117's hint asks for fits."""

from __future__ import annotations

import math

import pytest

from archkit.checks import run_rules
from archkit.plans.stress import stress_schedule
from archkit.spec import load_text
from archkit.spec.model import Level
from archkit.spec.stress_steps import MAX_STRESS_STEPS, steps_asked
from tests.fuzz.test_reproducers import REPRODUCERS


def _level(**kw: object) -> Level:
    return Level.model_validate({"id": "stress", "kind": "stress", **kw})


@pytest.mark.parametrize(
    "kw",
    [
        {"start_rps": 10, "step_rps": 10, "step_duration_s": 20, "max_rps": 120, "duration_s": 240},
        {"start_rps": 10, "step_rps": 10, "step_duration_s": 20, "max_rps": 1200, "duration_s": 240},
        {"start_rps": 2.5, "step_rps": 0.1, "max_rps": 50, "duration_s": 10_000},
        {"rate_rps": 4, "duration_s": 60},
        {"duration_s": 3600, "step_duration_s": 1, "search": {"start_rps": 1, "factor": 1.5, "max_rps": 500}},
        {"duration_s": 30, "step_duration_s": 1, "search": {"start_rps": 1, "factor": 1.01, "max_rps": 500}},
    ],
)
def test_the_closed_form_counts_the_schedules_steps(kw):
    level = _level(**kw)
    asked = steps_asked(level, 7.0)
    assert asked is not None and not asked.cut
    made = len(stress_schedule(level, 7.0))
    # a search's step lasts long enough to measure its percentile, at least step_duration_s: the
    # closed form's time steps are an upper bound there (368 s a step at 1 req/s for a P99)
    assert made == asked.steps if "search" not in kw else 1 <= made <= asked.steps


def test_a_level_past_the_cap_is_cut_to_it_and_the_hinted_step_fits():
    """By hand: (9,999,999.99 − 10) / 10 + 1 = 999,999 rate steps (batch 5's reproducer); the hint's
    step, 9,999,989.99 / 999 = 10,009.99 req/s (printed 10010), gives 1,000 steps; 10,010 gives
    ⌊9,999,989.99 / 10,010⌋ + 1 = 999, the last at 10 + 998 × 10,010 = 9,989,990 req/s."""
    level = _level(start_rps=10, step_rps=10, step_duration_s=1e-9, max_rps=9_999_999.99, duration_s=240)
    asked = steps_asked(level, None)
    assert asked is not None and asked.cut and asked.by_rate == 999_999
    assert len(stress_schedule(level, None)) == MAX_STRESS_STEPS
    fitted = _level(start_rps=10, step_rps=10_010, step_duration_s=1e-9, max_rps=9_999_999.99, duration_s=240)
    fit = steps_asked(fitted, None)
    assert fit is not None and fit.steps == 999 and not fit.cut
    assert stress_schedule(fitted, None)[-1][2] == 10 + 998 * 10_010
    exact = steps_asked(_level(start_rps=10, step_rps=9_999_989.99 / 999, max_rps=9_999_999.99), None)
    assert exact is not None and exact.by_rate == MAX_STRESS_STEPS and not exact.cut
    # a search's hinted factor, 1000^(1/999): its range in 1,000 steps
    factor = 1000 ** (1 / 999)
    search = _level(
        duration_s=3600, step_duration_s=1, search={"start_rps": 1, "factor": factor, "max_rps": 1000}
    )
    got = steps_asked(search, None)
    assert got is not None and got.by_rate == MAX_STRESS_STEPS and not got.cut
    assert math.isclose(factor, 1.00694, rel_tol=1e-5)


def test_the_reproducers_stress_level_is_a_located_warning_naming_the_field():
    """The schema-valid fuzz run's batch 5 (tests/fuzz/reproducers/valid-industrial-stress-step-1ns.yaml):
    `archkit check` warns at the level's `step_rps`, with the steps asked and the step that fits."""
    path = REPRODUCERS / "valid-industrial-stress-step-1ns.yaml"
    text = path.read_text(encoding="utf-8")
    res = load_text(text, str(path))
    assert res.spec is not None
    (d,) = [d for d in run_rules(res.spec, select=["AK117"]) if d.code == "AK117"]
    assert text.splitlines()[519] == "    step_rps: 10"
    assert d.severity.value == "warning" and d.path.endswith("step_rps") and (d.line, d.col) == (520, 15)
    assert "asks for 999,999 steps" in d.message and "stops at its 1,000th, at 10,000 req/s" in d.message
    assert "raise step_rps to at least 10010" in d.hint
