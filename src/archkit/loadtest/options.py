"""What a caller chose for one load test: the one options object from the command line to the plan.

`archkit loadtest` fills it from its options, `api.loadtest` takes it (or keyword overrides of it),
`session.execute` and `plan.build` read it. A new option is one field here plus its CLI flag.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from archkit.errors import InputError


class OptionsError(InputError, TypeError):
    """An option name that LoadtestOptions does not have."""


@dataclass(frozen=True)
class LoadtestOptions:
    """One load test's choices; None means "the spec's level decides"."""

    level: str = "baseline"  # baseline, stress, chaos or a level id of the spec
    env: str | None = None  # judge against this environment's budgets
    calibration: str | None = (
        None  # a calibration file replacing --env's (the prediction the run is compared with)
    )
    host: str | None = None  # target base URL (loopback only); default loadtest.target.host
    users: int | None = None  # closed model: concurrent users; open model: in-flight slots if no max_inflight
    rate: float | None = None  # offered requests/s (stress: the top step)
    duration: float | None = None  # seconds (stress: every step shortened in proportion)
    max_requests: int | None = None
    arrival: str | None = None  # constant, poisson (open model) or closed; default: the level's
    max_inflight: int | None = None  # open model: requests in flight at most
    workers: int = 0  # a locust master and N local worker processes
    master_host: str | None = None  # join this locust master instead
    master_port: int = 5557
    services: tuple[str, ...] = ()  # chaos: NAME=PID or NAME=@PIDFILE
    proxies: tuple[str, ...] = ()  # chaos: NAME=LISTEN_PORT:UPSTREAM_PORT
    metrics: tuple[str, ...] = ()  # extra metrics URLs to scrape (loopback)
    rules: tuple[str, ...] = ()  # alert rule files for the live Prometheus (default: the generated ones)
    prometheus: bool = True  # run a live Prometheus on the generated (or given) rules

    def with_(self, **changes: Any) -> LoadtestOptions:
        """A copy with some fields changed; an unknown name is an input error, not a TypeError trace."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise OptionsError(f"unknown load-test option(s): {', '.join(unknown)}")
        for key in ("services", "proxies", "metrics", "rules"):
            if key in changes:
                changes[key] = tuple(str(v) for v in changes[key] or ())
        return dataclasses.replace(self, **changes)
