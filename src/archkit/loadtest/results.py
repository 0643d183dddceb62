"""A load test's verdicts as located results (archkit.reporting), and their JUnit and SARIF forms.

Each verdict becomes a `reporting.Result` with its LT code (`archkit explain LT101`), located
where its budget is declared in the spec, so the one JUnit and the one SARIF writer report it
like a check finding or a verify drift.
"""

from __future__ import annotations

from typing import Any

from archkit import reporting
from archkit.diagnostics import Outcome
from archkit.loadtest import judge as judge_mod
from archkit.loadtest.codes import code_of
from archkit.reporting import Location, RuleInfo, junit, locate, sarif
from archkit.spec.model import Spec


def located_verdict(spec: Spec, v: judge_mod.Verdict, level: str) -> reporting.Result:
    """A verdict as a located result (archkit.reporting): its LT code, where its budget is declared."""
    return verdict_result(v, level, locate(spec, v.spec_path))


def verdict_result(v: judge_mod.Verdict, level: str, where: reporting.Location) -> reporting.Result:
    outcome = Outcome.UNKNOWN if v.passed is None else Outcome.PASS if v.passed else Outcome.ERROR
    return reporting.Result.at(
        where,
        code_of(v.id) or v.id,
        v.why,
        outcome,
        group=f"loadtest.{level}",
        name=v.id,
    )


def _located(res: Any) -> list[reporting.Result]:
    """The run's verdicts as located results; one made without its spec is located at the file only."""
    return res.located or [
        verdict_result(v, res.plan.level, Location(res.spec_file, 1, 1, ".".join(map(str, v.spec_path))))
        for v in res.verdicts
    ]


def junit_xml(res: Any) -> str:
    """One testcase per budget; a missed budget is a failure whose message says why."""
    return junit(
        _located(res),
        f"archkit loadtest {res.spec_name} {res.plan.level}",
        failure_type="budget-missed",
        empty="the spec declares no budget this level can judge",
        time_s=res.data.wall_s,
    )


def sarif_log(res: Any, version: str = "") -> str:
    """SARIF 2.1.0: a result per missed budget (error) and per budget that could not be judged (note)."""
    from archkit.loadtest.codes import CODES

    rules = {c.id: RuleInfo(c.title, c.title, c.rationale, c.source, explain=c.explain()) for c in CODES}
    return sarif(_located(res), "archkit loadtest", version, rules)
