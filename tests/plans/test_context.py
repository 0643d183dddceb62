"""Plans are computed once per run and read by every output; nothing renders text to parse it back."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.errors import InputError
from archkit.plans import context as context_mod
from archkit.plans import prepare
from archkit.plans.alerts import planner as planner_mod
from tests.conftest import EXAMPLES, ROOT

REFERENCE = ROOT / "specs" / "ocr-reference.yaml"


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"alert_plan": 0, "run_rules": 0, "generate": 0}

    def counting(name: str, module: object, attr: str) -> None:
        real = getattr(module, attr)

        def wrapper(*a, **kw):  # type: ignore[no-untyped-def]
            seen[name] += 1
            return real(*a, **kw)

        monkeypatch.setattr(module, attr, wrapper)

    counting("alert_plan", context_mod, "alert_plan")
    counting("run_rules", context_mod, "run_rules")
    counting("generate", api, "generate")
    return seen


def test_a_render_plans_alerts_and_runs_the_rules_once(counts: dict[str, int], tmp_path: Path) -> None:
    res = api.render(REFERENCE, tmp_path / "out", formats=(), only=["prometheus", "runbooks", "locust"])
    assert "prometheus/rules.yaml" in res.files and "runbooks/alerts.md" in res.files
    assert counts["alert_plan"] == 1 and counts["run_rules"] == 1


def test_a_load_test_generates_once(counts: dict[str, int]) -> None:
    """Stopped by the loopback guard (no traffic is sent), after the generators ran."""
    with pytest.raises(InputError, match="loopback"):
        api.loadtest(REFERENCE, "baseline", host="http://192.0.2.1:9", duration=1)
    assert counts["generate"] == 1 and counts["run_rules"] == 1 and counts["alert_plan"] == 1


@pytest.mark.parametrize("spec_file", EXAMPLES, ids=lambda p: p.stem)
def test_expected_rule_groups_come_from_the_plan_and_match_the_rendered_file(spec_file: Path) -> None:
    run = prepare(spec_file)
    names, note = api.expected_rule_groups(run)
    files, _ = api.generate(run.spec, str(spec_file), only=["prometheus"], formats=(), run=run)
    rendered = yaml.safe_load(files["prometheus/rules.yaml"])
    assert note == "" and names == [g["name"] for g in rendered["groups"]]


def test_the_planner_is_pure(counts: dict[str, int]) -> None:
    spec = prepare(REFERENCE).spec
    assert planner_mod.alert_plan(spec) == planner_mod.alert_plan(spec)
