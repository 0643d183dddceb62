"""One collector runs every rule's YAML fixture: pass/fail cases with expected line and column.

A fixture file `fixtures/AKnnn.yaml` holds `rule: AKnnn` and `cases:`, each with a `name`,
a full `spec:` text and `expect:` — the list of {line, col} (and optionally `message`, a
substring) of that rule's findings. An empty `expect` is a passing case.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archkit.checks import all_rules, run_rules
from archkit.spec import load_text

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("AK*.yaml"))


def _cases():
    for path in FIXTURES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for i, case in enumerate(doc["cases"]):
            yield pytest.param(doc["rule"], case, id=f"{doc['rule']}-{i}-{case['name']}")


@pytest.mark.parametrize("rule,case", list(_cases()))
def test_rule_case(rule, case):
    res = load_text(case["spec"], "case.yaml")
    assert res.ok, "fixture spec does not load: " + "; ".join(d.text() for d in res.diagnostics)
    if rule >= "AK200":
        # a fixture of a semantic rule must be structurally sound, or its findings confuse
        structural = [d.text() for d in run_rules(res.spec, select=["AK1"]) if d.severity.value == "error"]
        assert not structural, "fixture spec breaks structural rules: " + "; ".join(structural)
    found = [d for d in run_rules(res.spec, select=[rule]) if d.code == rule]
    got = sorted((d.line, d.col) for d in found)
    want = sorted((e["line"], e["col"]) for e in case.get("expect", []))
    assert got == want, "findings: " + "; ".join(d.text() for d in found)
    for exp in case.get("expect", []):
        if "message" in exp:
            assert any(
                exp["message"] in d.message and (d.line, d.col) == (exp["line"], exp["col"]) for d in found
            ), f"no finding at {exp['line']}:{exp['col']} says {exp['message']!r}"


def test_every_rule_has_a_fixture_with_pass_and_fail_cases():
    """Rules reported by the loader itself (AK100, AK101) are covered by the loader tests."""
    by_rule: dict[str, list] = {}
    for path in FIXTURES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert path.stem == doc["rule"], f"{path.name} holds cases of {doc['rule']}"
        by_rule[doc["rule"]] = doc["cases"]
    missing = [c for c in all_rules() if c not in by_rule and c not in {"AK100", "AK101"}]
    assert not missing, f"rules without fixtures: {missing}"
    for code, cases in by_rule.items():
        assert any(c.get("expect") for c in cases), f"{code}: no failing case"
        assert any(not c.get("expect") for c in cases), f"{code}: no passing case"
