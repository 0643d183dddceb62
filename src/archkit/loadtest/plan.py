"""A run plan: what one load-test process does, derived from the spec, a level and CLI overrides.

The plan is plain JSON so it can be handed to the worker process (`archkit.loadtest.worker`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from archkit.errors import InputError
from archkit.loadtest.options import LoadtestOptions
from archkit.plans.stress import Basis, SearchError, search_basis, stress_schedule
from archkit.reporting import locate
from archkit.spec.model import Level, Spec

GRACE_S = 35.0  # hard kill this long after the planned end (the worker drains ≤ 15 s): every run stops
DEFAULT_DURATION_S = {"baseline": 30.0, "stress": 60.0, "chaos": 60.0}
# Open model for baseline and stress (latency free of coordinated omission); chaos keeps the
# closed model: its error-burst and recovery analysis counts answers per second of users.
DEFAULT_ARRIVAL = {"baseline": "constant", "stress": "constant", "chaos": "closed"}
ARRIVAL_CHOICES = ("constant", "poisson", "closed")


class PlanError(InputError, ValueError):
    """The spec (or the options) do not describe a runnable load test."""


@dataclass
class Phase:
    """One stretch of constant offered rate (a stress level has one per step)."""

    start_s: float
    duration_s: float
    rate_rps: float | None


@dataclass
class Plan:
    """Everything the worker needs; see module docstring."""

    spec: str
    level: str
    kind: str
    protocol: str
    host: str
    users: int
    phases: list[Phase]
    max_requests: int
    locustfile: str = ""
    payload_root: str = "."
    seed: int = 1
    level_path: tuple = ()
    fallback_status: dict = field(default_factory=dict)
    arrival: str = "closed"  # constant or poisson: open model, users = the maximum in flight

    @property
    def open(self) -> bool:
        return self.arrival != "closed"

    @property
    def duration_s(self) -> float:
        return sum(p.duration_s for p in self.phases)

    @property
    def deadline_s(self) -> float:
        return self.duration_s + GRACE_S

    def to_json(self) -> dict:
        d = asdict(self)
        d["duration_s"] = self.duration_s
        return d

    @classmethod
    def from_json(cls, d: dict) -> Plan:
        """The plan a worker process reads back (`to_json`'s inverse)."""
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["phases"] = [Phase(**p) for p in d["phases"]]
        kw["level_path"] = tuple(d.get("level_path", ()))
        return cls(**kw)


def _where(spec: Spec, level: Level) -> str:
    w = locate(spec, tuple(level.spec_path) + ("search",))
    return f"{w.file}:{w.line}: {w.path}"


def find_level(spec: Spec, level: str) -> Level:
    """The spec's level with this id, else the first of this kind, else a default of that kind."""
    levels = spec.loadtest.levels if spec.loadtest else []
    for lv in levels:
        if lv.id == level:
            return lv
    for lv in levels:
        if lv.kind == level:
            return lv
    if level not in DEFAULT_DURATION_S:
        raise PlanError(
            f"no level {level!r} in loadtest.levels (have: {', '.join(lv.id for lv in levels) or 'none'})"
        )
    made = Level(id=level, kind=level, duration_s=DEFAULT_DURATION_S[level])
    made._path = ("loadtest", "levels")
    return made


def build(spec: Spec, opts: LoadtestOptions, spec_name: str = "spec", basis: Basis | None = None) -> Plan:
    """The plan for `opts.level`; `opts.rate` is the offered rate (for stress: the highest step);
    `basis`: a stress search's predicted knee (default: predicted here when the search needs it)."""
    rate, duration, users = opts.rate, opts.duration, opts.users
    lt = spec.loadtest
    if lt is None:
        raise PlanError("the spec has no loadtest section (target, scenarios, levels)")
    if not lt.scenarios:
        raise PlanError("loadtest.scenarios is empty: nothing to send")
    lv = find_level(spec, opts.level)
    design = spec.budgets.throughput_rps
    if lv.kind == "stress":
        if rate and lv.search is not None:
            lv = lv.model_copy(update={"search": lv.search.model_copy(update={"max_rps": rate})})
        elif rate:
            lv = lv.model_copy(update={"max_rps": rate})
        if basis is None and lv.search is not None and lv.search.start_rps is None:
            basis = search_basis(spec, lv)
        try:
            phases = [Phase(s, d, r) for s, d, r in stress_schedule(lv, design, basis)]
        except SearchError as exc:
            raise PlanError(f"{_where(spec, lv)}: {exc}") from None
        if duration:  # a shorter run keeps every step, each shortened in proportion
            k = duration / sum(p.duration_s for p in phases)
            phases = [Phase(round(p.start_s * k, 6), round(p.duration_s * k, 6), p.rate_rps) for p in phases]
    else:
        phases = [Phase(0.0, float(duration or lv.duration_s), rate or lv.rate_rps or design)]
    chosen = opts.arrival or lv.arrival or DEFAULT_ARRIVAL[lv.kind]
    if chosen not in ARRIVAL_CHOICES:
        raise PlanError(f"unknown arrival {chosen!r} (use {', '.join(ARRIVAL_CHOICES)})")
    if chosen != "closed" and not all(p.rate_rps for p in phases):
        raise PlanError(
            f"level {lv.id!r}: an open model ({chosen} arrivals) needs an offered rate (rate_rps)"
        )
    if chosen == "closed":
        n_users = int(users or lv.users)
    else:  # open model: the users are the slots a request can be in flight in
        n_users = int(opts.max_inflight or lv.max_inflight or users or lv.users)
    max_requests = opts.max_requests
    if max_requests is None:
        max_requests = lv.max_requests
    if max_requests is None:
        rates = [p.rate_rps for p in phases if p.rate_rps]
        if len(rates) == len(phases):
            offered = sum(r * p.duration_s for r, p in zip(rates, phases, strict=True))
            max_requests = int(math.ceil(offered * 1.5)) + n_users
        else:
            max_requests = 10_000_000  # unpaced: the time bound is what stops it
    return Plan(
        spec=spec_name,
        level=lv.id,
        kind=lv.kind,
        protocol=lt.target.protocol,
        host=opts.host or lt.target.host,
        users=n_users,
        phases=phases,
        max_requests=max_requests,
        level_path=tuple(lv.spec_path),
        arrival=chosen,
    )
