"""One run's context: the prepared spec and every plan derived from it, each computed once.

`prepare(path, env)` is how every `archkit.api` function starts: it loads the spec, applies
the environment and raises `SpecLoadError` / `UnknownEnvironmentError` (archkit.errors) when
it cannot. The plans are `functools.cached_property`s of the `RunContext`, so a render, a
verify and a load test of one run share one check pass and one alert plan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

from archkit.checks import run_rules
from archkit.diagnostics import Diagnostic, sort_diagnostics
from archkit.errors import SpecLoadError, UnknownEnvironmentError
from archkit.plans.alerts import AlertPlan, alert_plan
from archkit.plans.loadtest import LoadTestPlan, load_test_plan
from archkit.plans.runbook import RunbookOrder, runbook_orders
from archkit.plans.slo import SloPlan, slo_plan
from archkit.spec import Spec, load_file


@dataclass(eq=False)
class RunContext:
    """A loaded spec (environment applied) and its plans, memoised for the run."""

    spec: Spec
    file: str = "<spec>"
    env: str | None = None

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        """Every check rule's findings, sorted (the rule catalogue runs once per run)."""
        return sort_diagnostics(run_rules(self.spec, None, None))

    @cached_property
    def alerts(self) -> AlertPlan:
        return alert_plan(self.spec)

    @cached_property
    def slos(self) -> SloPlan:
        """The spec's SLOs, resolved (archkit.plans.slo): what the rules, dashboard and OpenSLO share."""
        return slo_plan(self.spec)

    @cached_property
    def load_test(self) -> LoadTestPlan | None:
        return load_test_plan(self.spec)

    @cached_property
    def runbooks(self) -> dict[str, RunbookOrder]:
        return runbook_orders(self.spec)


def with_environment(spec: Spec, file: str, env: str | None, calibration: str | None = None) -> Spec:
    """The spec with environment `env`'s overrides applied; UnknownEnvironmentError if it has none.

    `calibration`: a calibration file to use in place of the one the environment names."""
    if not env:
        return spec
    if spec.environment(env) is None:
        raise UnknownEnvironmentError(file, env, [e.id for e in spec.environments])
    from archkit.calibrate.apply import with_calibration  # environments[].calibration: measured service times

    return with_calibration(spec, file, env, calibration).with_environment(env)


def prepare(
    path: str | os.PathLike[str], env: str | None = None, calibration: str | None = None
) -> RunContext:
    """Load `path`, apply `env`: the start of every api call. Raises SpecLoadError, UnknownEnvironmentError."""
    res = load_file(path)
    if res.spec is None:
        raise SpecLoadError(res.file, res.diagnostics)
    return RunContext(with_environment(res.spec, res.file, env, calibration), res.file, env)
