"""SLO rules: the Workbook's four burn tiers under promtool, latency SLOs, and two specs in one Prometheus.

promtool (Debian's prometheus package) runs the generated rules; the live test starts the real
Prometheus binary on 127.0.0.1 with a temporary TSDB.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from archkit import api
from archkit.generators.gen_prometheus import rules_document, unit_tests_document
from archkit.loadtest.prom import LivePrometheus
from archkit.plans.alerts import alert_plan
from archkit.plans.context import prepare
from archkit.plans.slo import rule_cost, slo_plan
from archkit.spec.model import Spec

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DEMO = Path(__file__).parent / "data" / "slo-demo.yaml"
STARTER = Path("src/archkit/starter.yaml")
pytestmark = pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool not installed (make setup)")

# Google SRE Workbook, "Alerting on SLOs", recommended windows and burn rates for a 99.9 % SLO
WORKBOOK = {
    "Fast": (14.4, "1h", "5m"),
    "Medium": (6, "6h", "30m"),
    "Slow": (3, "1d", "2h"),
    "Steady": (1, "3d", "6h"),
}


def _spec(path: Path = DEMO) -> Spec:
    return prepare(path).spec


def _promtool(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, cwd=folder, timeout=300, check=False
    )


def _write(folder: Path, rules: dict[str, Any], tests: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rules.yaml").write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    (folder / "rules.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False), encoding="utf-8")
    return folder


def test_four_tiers_have_the_workbook_factors_windows_and_severities() -> None:
    alerts = {a.name: a for a in alert_plan(_spec()).alerts}
    for tier, (factor, long_w, short_w) in WORKBOOK.items():
        a = alerts[f"AvailabilityErrorBudgetBurn{tier}"]
        thr = f"> {factor * 0.001:.6g})"
        assert a.expr.count(thr) == 2, a.expr
        assert f"ratio_rate{long_w}{{" in a.expr and f"ratio_rate{short_w}{{" in a.expr
        assert a.severity == ("page" if tier in ("Fast", "Medium") else "ticket")
        assert a.labels["archkit_service"] == "slo-demo" and a.labels["archkit_slo"] == "availability"


def test_tier_matrix_is_the_workbook_table_and_promtool_passes_it(tmp_path: Path) -> None:
    spec = _spec()
    plan = alert_plan(spec)
    matrices = [m for m in plan.matrices if m.name.startswith("SLO availability ")]
    fired = {
        m.name.split(" at ")[1]: {
            n.removeprefix("AvailabilityErrorBudgetBurn") for n, f in m.expect.items() if f
        }
        for m in matrices
    }
    # between two tiers' factors exactly the slower tiers fire; half the budget fires none
    assert fired == {
        "18x burn (1.8 % errors)": {"Fast", "Medium", "Slow", "Steady"},
        "10.2x burn (1.02 % errors)": {"Medium", "Slow", "Steady"},
        "4.5x burn (0.45 % errors)": {"Slow", "Steady"},
        "2x burn (0.2 % errors)": {"Steady"},
        "0.5x burn (0.05 % errors)": set(),
    }
    folder = _write(tmp_path, rules_document(spec, plan), unit_tests_document(spec, plan=plan))
    assert _promtool(folder, "check", "rules", "rules.yaml").returncode == 0
    res = _promtool(folder, "test", "rules", "rules.test.yaml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def _one_case(spec: Spec, error_ratio: float) -> dict[str, Any]:
    """A hand-written promtool test: errors at `error_ratio` of requests for 30 minutes."""
    plan = alert_plan(spec)
    tiers = {a.name: a for a in plan.alerts if a.name.startswith("AvailabilityErrorBudgetBurn")}
    ok = 100 * (1 - error_ratio)
    checks = []
    for name, a in tiers.items():
        fires = WORKBOOK[name.removeprefix("AvailabilityErrorBudgetBurn")][0] * 0.001 < error_ratio
        exp = [{"exp_labels": {**a.labels, "severity": a.severity}}] if fires else []
        checks.append({"eval_time": "30m", "alertname": name, "exp_alerts": exp})
    return {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": 'http_requests_total{code="503"}', "values": f"0+{100 * error_ratio:g}x40"},
                    {"series": 'http_requests_total{code="200"}', "values": f"0+{ok:g}x40"},
                ],
                "alert_rule_test": checks,
            }
        ],
    }


def _strip_annotations(doc: dict[str, Any]) -> dict[str, Any]:
    for g in doc["groups"]:
        for r in g["rules"]:
            r.pop("annotations", None)
    return doc


def test_tickets_fire_without_pages_at_0_4_percent_errors(tmp_path: Path) -> None:
    spec = _spec()
    folder = _write(tmp_path, _strip_annotations(rules_document(spec)), _one_case(spec, 0.004))
    res = _promtool(folder, "test", "rules", "rules.test.yaml")
    assert res.returncode == 0, res.stdout[-3000:]
    # and the test can fail: expecting the same at 2 % errors (every tier fires) does not pass
    case = _one_case(spec, 0.004)
    case["tests"][0]["input_series"][0]["values"] = "0+2x40"
    case["tests"][0]["input_series"][1]["values"] = "0+98x40"
    _write(tmp_path, _strip_annotations(rules_document(spec)), case)
    bad = _promtool(folder, "test", "rules", "rules.test.yaml")
    assert bad.returncode == 1 and "AvailabilityErrorBudgetBurnFast" in bad.stdout + bad.stderr


def test_latency_slo_renders_and_passes_promtool(tmp_path: Path) -> None:
    spec = _spec()
    slos = {s.name: s for s in slo_plan(spec).slos}
    on_bucket, off_bucket = slos["latency-p99"], slos["latency-800ms"]
    assert on_bucket.gap is None and on_bucket.le == pytest.approx(0.25)
    assert off_bucket.gap is not None and off_bucket.le == pytest.approx(0.5)  # the boundary under 800 ms
    assert off_bucket.gap.worst_error_ms == pytest.approx(300)
    files, _ = api.generate(spec, DEMO.name, only=["prometheus"])
    (tmp_path / "rules.yaml").write_text(files["prometheus/rules.yaml"], encoding="utf-8")
    (tmp_path / "rules.test.yaml").write_text(files["prometheus/rules.test.yaml"], encoding="utf-8")
    assert "archkit:slo_sli_error:ratio_rate7d" in files["prometheus/rules.yaml"]  # the 7-day SLO's window
    assert _promtool(tmp_path, "check", "rules", "rules.yaml").returncode == 0
    res = _promtool(tmp_path, "test", "rules", "rules.test.yaml")
    assert res.returncode == 0, res.stdout[-3000:]
    assert "SLO latency-p99 at 4.5x burn" in files["prometheus/rules.test.yaml"]


def test_rules_read_the_matchers_and_cost_is_counted() -> None:
    doc = yaml.safe_dump(rules_document(_spec()))
    assert 'code=~\\"5..|429\\"' in doc.replace("'", '"') or 'code=~"5..|429"' in doc
    assert 'handler!=\\"/healthz\\"' in doc.replace("'", '"') or 'handler!="/healthz"' in doc
    plan = alert_plan(_spec())
    cost = rule_cost(plan)
    assert cost.recordings == len(plan.recordings) and cost.alerts == len(plan.alerts)
    assert cost.series >= cost.recordings + cost.alerts


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.live
@pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason="prometheus is not installed (make setup)")
def test_two_specs_with_the_same_stage_ids_do_not_collide_in_one_prometheus() -> None:
    a, b = _spec(DEMO), _spec(STARTER)
    assert {s.id for s in a.dataflow.stages} & {s.id for s in b.dataflow.stages}  # both have 'ingress'
    files = {
        "a.yaml": api.generate(a, "a.yaml", only=["prometheus"])[0]["prometheus/rules.yaml"],
        "b.yaml": api.generate(b, "b.yaml", only=["prometheus"])[0]["prometheus/rules.yaml"],
    }
    prom = LivePrometheus([], files, _free_port())
    prom.start()
    try:
        deadline = time.monotonic() + 30
        series: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            with urllib.request.urlopen(
                prom.url + "/api/v1/query?query=archkit:slo_objective:ratio", timeout=3
            ) as r:
                series = json.loads(r.read())["data"]["result"]
            if len(series) == len(slo_plan(a).slos) + len(slo_plan(b).slos):
                break
            time.sleep(0.5)
        keys = sorted((s["metric"]["archkit_service"], s["metric"]["archkit_slo"]) for s in series)
        assert keys == sorted(
            [("slo-demo", s.name) for s in slo_plan(a).slos]
            + [("my-ai-service", s.name) for s in slo_plan(b).slos]
        )
        with urllib.request.urlopen(prom.url + "/api/v1/rules", timeout=3) as r:
            groups = json.loads(r.read())["data"]["groups"]
        names = [g["name"] for g in groups]
        assert len(names) == len(set(names)) and any("slo-demo" in n for n in names)
        assert all(rule["health"] != "err" for g in groups for rule in g["rules"])
    finally:
        prom.stop()


def test_render_reports_the_rules_cost(tmp_path: Path) -> None:
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "archkit", "render", str(DEMO), "-o", str(tmp_path / "out"), "--only", "prometheus"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    cost = rule_cost(alert_plan(_spec()))
    assert cost.line() in out.stdout, out.stdout + out.stderr
    assert "recording rules" in cost.line() and cost.series == cost.recordings + 2 * cost.alerts
