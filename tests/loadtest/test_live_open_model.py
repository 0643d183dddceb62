"""Open-model runs against the toy service: drops at the in-flight bound, a generator that falls behind."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app

from .conftest import toy_spec

pytestmark = pytest.mark.live


def test_a_slow_server_drops_requests_at_the_in_flight_bound_and_they_count(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=300)  # 2 slots x 1 / 0.3 s: ~6.7 req/s can be in service, 20 are due
    spec = toy_spec(tmp_path, toy.port)
    res = api.loadtest(
        spec, "baseline", rate=20, duration=3, max_inflight=2, prometheus=False, plots=False
    ).result
    gen = res.measured["generator"]
    assert gen["kept_up"] is True and gen["scheduled"] == 60
    assert gen["dropped"] >= 25 and abs(gen["sent"] + gen["dropped"] - 60) <= 1, gen
    e2e = res.measured["end_to_end"]
    assert e2e["dropped"] == gen["dropped"] and e2e["requests"] == gen["sent"]
    assert e2e["error_rate"] == pytest.approx(gen["dropped"] / 60, abs=0.02)  # drops are failures
    assert res.generator_error is None and "dropped" in gen["message"]
    assert sum(s["dropped"] for s in res.measured["seconds"]) <= gen["dropped"]
    assert e2e["p50_ms"] >= 300  # the server's delay is a floor for the scheduled-time latency


def test_a_generator_that_cannot_hold_the_rate_exits_2(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=0)
    spec = toy_spec(tmp_path, toy.port)
    _load_commands()
    args = [
        "loadtest",
        str(spec),
        "--rate",
        "20000",
        "--duration",
        "2",
        "--max-inflight",
        "200",
        "--no-prometheus",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "could not keep up" in r.output and "of 20000 req/s" in r.output
