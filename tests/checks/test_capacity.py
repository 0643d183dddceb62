"""`archkit capacity` and `api.capacity`: the seed's batching trade-off explained with numbers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app
from tests.conftest import EXAMPLES, ROOT

INDUSTRIAL = ROOT / "examples" / "industrial-inspection.yaml"


def _run(*args):
    _load_commands()
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1"})


def test_industrial_report_explains_batch8_and_what_meets_the_budget():
    rep = api.capacity(INDUSTRIAL)
    assert rep.missed
    (det,) = rep.stages
    assert det["stage"] == "detect" and det["arrival_rps"] == 30 and det["replicas"] == 2
    assert det["budget_ms"] == 40 and det["budget_source"] == "stage 'detect' p99_ms"
    d = det["declared"]
    assert d["batch_size"] == 8 and d["max_queue_delay_us"] == 100000 and not d["meets"]
    assert d["fill_p99_ms"] == 100.0 and d["p99_ms"] > 50
    rows = {r["batch_size"]: r for r in det["per_batch"]}
    assert rows[1]["batch_ms"] == 47 and rows[8]["batch_ms"] == 224 and rows[8]["per_item_ms"] == 28
    assert rows[8]["ceiling_rps"] > rows[1]["ceiling_rps"]  # bigger batches: more throughput …
    assert rows[8]["p99_ms"] > rows[1]["p99_ms"]  # … and a worse tail
    stage_rec, e2e_rec = det["recommendations"]
    assert not stage_rec["met"] and "47 ms" in stage_rec["reason"]
    assert e2e_rec["met"] and e2e_rec["budget_source"] == "budgets.p99_ms"
    assert (e2e_rec["batch_size"], e2e_rec["max_queue_delay_us"], e2e_rec["replicas"], e2e_rec["gpus"]) == (
        1,
        0,
        6,
        6.0,
    )
    assert e2e_rec["p99_ms"] <= 50 and e2e_rec["sim_p99_ms"] <= 50
    assert (
        d["sim_p99_ms"] > 50 and d["sim_p99_ms"] < d["p99_ms"]
    )  # simulation confirms; bound is conservative


def test_cli_text_golden_and_exit_code(golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    res = _run("capacity", "examples/industrial-inspection.yaml")
    assert res.exit_code == 1
    assert "OVER BUDGET" in res.output and "why:" in res.output
    golden.check(ROOT / "tests" / "checks" / "examples" / "capacity-industrial-inspection.txt", res.output)


def test_cli_json_is_the_report():
    res = _run("capacity", str(ROOT / "examples" / "recommendation.yaml"), "--format", "json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["name"] == "recommendation"
    assert [s["stage"] for s in data["stages"]] == ["rank"]
    assert data["stages"][0]["declared"]["meets"] is True


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_analyses(example):
    rep = api.capacity(example)
    assert not rep.diagnostics and rep.stages
    for s in rep.stages:
        assert s["why"] and s["recommendations"]


def test_bad_input_exits_2_without_traceback(tmp_path):
    res = _run("capacity", str(tmp_path / "missing.yaml"))
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = _run("capacity", str(INDUSTRIAL), "--env", "nope")
    assert res.exit_code == 2


def test_cpu_worker_stages_are_mmc_and_overload_fails(tmp_path):
    spec = tmp_path / "w.yaml"
    spec.write_text(
        "apiVersion: archkit/v1\nmetadata: {name: t}\nbudgets: {throughput_rps: 100}\n"
        "dataflow:\n  stages:\n    - {id: parse, kind: preprocess, p50_ms: 30, concurrency: 2}\n"
        "    - {id: rules, kind: rules, p50_ms: 30, concurrency: 8}\n",
        encoding="utf-8",
    )
    rep = api.capacity(spec)
    workers = {w["stage"]: w for w in rep.workers}
    assert workers["parse"]["rho"] == 1.5 and workers["parse"]["wait_mean_ms"] is None  # overloaded
    assert workers["rules"]["rho"] == pytest.approx(0.375) and workers["rules"]["wait_mean_ms"] < 1
    assert rep.missed
    res = _run("capacity", str(spec))
    assert res.exit_code == 1 and "M/M/2 workers" in res.output and "budget none" in res.output
