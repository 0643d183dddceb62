"""One SARIF writer and one JUnit writer for check diagnostics, verify findings and load-test verdicts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from archkit import api
from archkit.diagnostics import Diagnostic, Severity
from archkit.loadtest.judge import Verdict
from archkit.loadtest.results import located_verdict
from archkit.reporting import Located, Outcome, Result, RuleInfo, junit, locate, sarif
from archkit.verify.findings import Finding, Status
from tests.conftest import ROOT

SCHEMA = json.loads((ROOT / "tests/data/sarif-2.1.0.json").read_text(encoding="utf-8"))
SPEC = ROOT / "examples" / "industrial-inspection.yaml"
MISSED = Verdict(
    "end_to_end.p99_ms",
    "end_to_end",
    "p99_ms",
    "<=",
    50,
    80,
    "ms",
    False,
    "80 ms > 50 ms",
    ("budgets", "p99_ms"),
)


def _spec():
    res = api.load(SPEC)
    assert res.spec is not None
    return res.spec


def _three() -> list[Located]:
    spec = _spec()
    diag = Diagnostic(
        "AK203", Severity.ERROR, "predicted P99 over budget", "a.yaml", 4, 7, "x.y", hint="batch 1"
    )
    finding = Finding("kube", "deploy/triton", "VK111", Status.DRIFT, "replicas 1, spec 3", "a.yaml", 9, 3)
    return [diag, finding, located_verdict(spec, MISSED, "baseline")]


def test_all_three_result_kinds_are_located_results() -> None:
    for r in _three():
        assert isinstance(r.outcome, Outcome) and r.outcome is Outcome.ERROR
        assert r.file and r.line >= 1 and r.code


def test_the_verdict_is_located_where_its_budget_is_declared() -> None:
    spec = _spec()
    text = SPEC.read_text(encoding="utf-8").splitlines()
    where = locate(spec, ("budgets", "p99_ms"))
    assert "p99_ms" in text[where.line - 1] and where.path == "budgets.p99_ms"
    loc = _three()[2]
    assert (loc.line, loc.code) == (where.line, "LT101")


def test_one_sarif_log_for_all_three_validates_and_carries_the_fix_hint() -> None:
    log = json.loads(
        sarif(_three(), "archkit", "0", {"AK203": RuleInfo("predicted-p99", "P99", "why", "seed 000 §2.1")})
    )
    jsonschema.validate(log, SCHEMA)
    results = log["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["AK203", "VK111", "LT101"]
    assert (
        results[0]["message"]["text"].endswith("— batch 1") and results[0]["properties"]["hint"] == "batch 1"
    )
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["AK203"]["properties"]["source"] == "seed 000 §2.1"


def test_passes_are_left_out_of_sarif_and_unknowns_are_reviews() -> None:
    items = [
        Result("X1", "fine", Outcome.PASS),
        Result("X2", "could not read", Outcome.UNKNOWN),
    ]
    log = json.loads(sarif(items, "t"))
    jsonschema.validate(log, SCHEMA)
    assert [(r["ruleId"], r["kind"], r["level"]) for r in log["runs"][0]["results"]] == [
        ("X2", "review", "note")
    ]


def test_one_junit_writer_groups_fails_and_skips_and_escapes() -> None:
    items = [*_three(), Result("X2", 'a "quoted" <tag> & more', Outcome.UNKNOWN, group="g")]
    root = ET.fromstring(junit(items, "run"))
    assert root.get("tests") == "4" and root.get("failures") == "3" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"AK2xx", "kube", "loadtest.baseline", "g"}
    assert suites["g"].find("testcase/skipped").get("message") == 'a "quoted" <tag> & more'


@pytest.mark.parametrize("empty", ["no budgets"])
def test_junit_without_results_still_has_a_case(empty: str) -> None:
    root = ET.fromstring(junit([], "run", empty=empty))
    assert root.find("testsuite/testcase/skipped").get("message") == empty


def test_the_load_test_sarif_log_names_its_lt_rules_and_validates() -> None:
    from types import SimpleNamespace

    from archkit.loadtest.results import junit_xml, sarif_log

    spec = _spec()
    missed = MISSED
    res = SimpleNamespace(
        located=[located_verdict(spec, missed, "baseline")],
        verdicts=[missed],
        spec_name="x",
        spec_file=str(SPEC),
        plan=SimpleNamespace(level="baseline"),
        data=SimpleNamespace(wall_s=1.0),
    )
    log = json.loads(sarif_log(res, "0"))
    jsonschema.validate(log, SCHEMA)
    assert {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]} >= {"LT101"}
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["LT101"]
    case = ET.fromstring(junit_xml(res)).find("testsuite/testcase")
    assert case is not None and case.get("name") == "end_to_end.p99_ms" and case.find("failure") is not None
