"""Walking a fault tree's checks live: the plan, the runner, the judge (`archkit runbook`)."""

from archkit.runbook.walk import (
    CheckResult,
    RunbookError,
    RunbookReport,
    Step,
    judge,
    plan,
    run_check,
    walk,
)

__all__ = ["CheckResult", "RunbookError", "RunbookReport", "Step", "judge", "plan", "run_check", "walk"]
