"""The runtime a generated locustfile wires its plan to: the mix, the levels, the pacer and the user class."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from locust.exception import StopUser

from archkit.loadtest.runtime.mix import Level, Mix, Scenario
from archkit.loadtest.runtime.pacing import ClosedPacer, Pacer
from archkit.loadtest.runtime.protocols import ServiceUser, protocol
from archkit.loadtest.safety import is_loopback

LOG = logging.getLogger("archkit.locustfile")


class Runtime:
    """One generated locustfile's plan, live: which protocol sends what, paced by which pacer."""

    def __init__(
        self,
        service: str,
        protocol_name: str,
        host: str,
        timeout_s: float,
        scenarios: Sequence[Mapping[str, Any]],
        levels: Mapping[str, Mapping[str, Any]],
        module: str = __name__,
    ) -> None:
        self.service = service
        self.protocol = protocol_name
        self.host = host
        self.timeout_s = float(timeout_s)
        self.mix = Mix([Scenario.of(d) for d in scenarios])
        self.levels = {k: Level.of(k, v) for k, v in levels.items()}
        self.pacer: Pacer = ClosedPacer()  # the load-test worker installs an open-model one
        self.module = module
        self._user: type[ServiceUser] | None = None

    def require_target(self, url: str) -> None:
        """Stop the user (not the process) whose target is not a loopback address."""
        if not is_loopback(url):
            LOG.error("refusing to send load to %s: only loopback hosts are allowed", url)
            raise StopUser()

    def use_pacer(self, pacer: Pacer) -> None:
        """Pace every user by `pacer` from now on (the worker's open model)."""
        self.pacer = pacer

    def user_class(self) -> type[ServiceUser]:
        """The concrete locust user class of this file's protocol (one per runtime)."""
        if self._user is None:
            base = protocol(self.protocol)
            attrs: dict[str, Any] = {
                "abstract": False,
                "host": self.host,
                "runtime": self,
                "__module__": self.module,
                "__doc__": base.__doc__,
                **base.class_attributes(self.timeout_s),
            }
            self._user = type(base.__name__, (base,), attrs)
        return self._user

    def wire(self, events: Any) -> None:
        """Plain `locust -f`: the --archkit-level/--archkit-rate options and the host check at start."""
        events.init_command_line_parser.add_listener(self._arguments)
        events.init.add_listener(self._configure)

    def _arguments(self, parser: Any, **_kw: Any) -> None:
        parser.add_argument(
            "--archkit-level", default=next(iter(self.levels), ""), help="level of the spec to run"
        )
        parser.add_argument(
            "--archkit-rate", type=float, default=0.0, help="offered requests/s in total (0: the level's)"
        )

    def _configure(self, environment: Any, **_kw: Any) -> None:
        host = environment.host or self.host
        if not is_loopback(host):
            sys.exit(f"locustfile: refusing to send load to {host}: only loopback hosts are allowed")
        opts = environment.parsed_options
        if opts is None or not hasattr(opts, "archkit_level") or not isinstance(self.pacer, ClosedPacer):
            return  # used as a library (archkit loadtest): the worker configures the pacer itself
        level = self.levels.get(opts.archkit_level)
        users = getattr(opts, "num_users", None) or (level.users if level else 1)
        rate = opts.archkit_rate or (level.rate_rps if level else None)
        steps = [] if opts.archkit_rate or level is None else list(level.steps)
        self.pacer.configure(rate, users, steps)
