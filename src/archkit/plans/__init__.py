"""Plans: typed values derived from a spec that more than one output needs, computed once per run.

Between the analysis/checks and everything that renders or compares (generators, verify,
loadtest, runbook): the alert plan (`alerts`), the load-test plan (`loadtest`), the runbook
order (`runbook`), and the per-run context that memoises them (`context.RunContext`, made by
`context.prepare`). Plans are pure functions of the spec; nothing here renders text.
"""

from __future__ import annotations

from archkit.plans.alerts import Alert, AlertPlan, Recording, alert_plan
from archkit.plans.context import RunContext, prepare, with_environment
from archkit.plans.loadtest import LevelPlan, LoadTestPlan, ScenarioPlan, load_test_plan
from archkit.plans.runbook import RunbookOrder, runbook_order, runbook_orders

__all__ = [
    "Alert",
    "AlertPlan",
    "LevelPlan",
    "LoadTestPlan",
    "Recording",
    "RunContext",
    "RunbookOrder",
    "ScenarioPlan",
    "alert_plan",
    "load_test_plan",
    "prepare",
    "runbook_order",
    "runbook_orders",
    "with_environment",
]
