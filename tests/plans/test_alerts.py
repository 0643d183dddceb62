"""The alert plan's expression pieces say the same as the expression Prometheus evaluates.

Every per-stage and golden-signal alert declares its pieces; an SLO alert may (when it does, they
must agree with its expression too).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archkit.plans import alert_plan, prepare
from archkit.plans.alerts.model import fmt_number
from tests.conftest import EXAMPLES, OCR_SPEC, REFERENCE_SPECS

SPECS = EXAMPLES + REFERENCE_SPECS


@pytest.mark.parametrize("spec_file", SPECS, ids=lambda p: p.stem)
def test_query_op_threshold_rebuild_the_expression(spec_file: Path) -> None:
    plan = alert_plan(prepare(spec_file).spec)
    assert plan.alerts
    for a in plan.alerts:
        if a.group == "slo" and not a.query:
            continue  # SLO burn-rate rules come from archkit.plans.slo; pieces are optional there
        assert a.query and a.threshold is not None and a.op in (">", "<", ">=", "<="), a.name
        if len(a.windows) > 1:  # multi-window burn rate: the same comparison per window, joined by and
            assert a.expr.startswith(f"{a.query} {a.op} {fmt_number(a.threshold)} and "), a.name
            assert all(f"[{w}]" in a.expr for w in a.windows), a.name
        else:
            assert a.expr == f"{a.query} {a.op} {fmt_number(a.threshold)}", a.name
        assert all(f"[{w}]" in a.query for w in a.windows[:1]), a.name


def test_rule_groups_hold_every_alert_and_recording_once() -> None:
    plan = alert_plan(prepare(OCR_SPEC).spec)
    in_groups = [a.name for g in plan.groups for a in g.alerts]
    assert sorted(in_groups) == sorted(a.name for a in plan.alerts)
    assert sum(len(g.recordings) for g in plan.groups) == len(plan.recordings)
    assert len(set(plan.group_names)) == len(plan.group_names)
