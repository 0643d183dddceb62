"""Admission and rate limits (`spec.traffic`) as the performance model applies them.

- **Rate limits** are token buckets in front of the pipeline (Nginx `limit_req`, an API
  gateway's per-model quota, seed 000 §2.1 and seed 004 §3.2): `rate_rps` sustained and `burst`
  more at once. Without `delay` a request finding the bucket empty is refused at once; with it,
  requests wait for their turn (smoothing bursts to the rate) and only one that would wait
  beyond `burst` places is refused. Scope `model` counts only the requests whose route visits
  its stage; scope `client` gives each of `clients` clients its own bucket, the traffic spread
  evenly over them. Limits apply in the order written; a refused request uses no later bucket.
  The arrival times are known before the simulation runs, so buckets are applied to them first
  (`apply_rate_limits`) and the simulation sees the admitted requests at their admitted times.
- **Admission limits** of a service (`traffic.admission` with `service`, else the service's
  `admission.max_inflight`): requests in flight from their first visit to one of its stages
  until answered, at most `max_inflight`, and `max_queue` more waiting for a place; a request
  beyond both is refused at once (the reference gateway's fast 429). The event loop
  (`pipesim_kernel`) keeps these counts. A stage's `max_queue` bounds its own queue (as a
  batcher's `max_queue_size` does); a call it refuses fails the request (the server's error,
  or the call's fallback), counted as failed rather than shed. A refusal costs the processor time
  of the service's ingress stage (`refusal_stage`); the simulation charges it as a steady load on
  that stage's cores (`pipesim`: the refused rate times the stage's mean work, taken off the cores
  the admitted requests share, to a fixed point). A token bucket's refusal costs the same exchange
  on the service every request enters (`entry_refusal_stage`), charged likewise at the rate the
  buckets refuse.
- Closed form (`admitted_rps`): the fluid bound, min(offered, limit) per bucket, which is what
  a long run at a constant rate above the limit admits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from archkit.spec.model import Spec
from archkit.spec.traffic import RateLimit

MAX_GROUPS = 63  # admission groups a request can hold at once: bits of one int64


@dataclass(frozen=True)
class AdmissionGroup:
    """One service's in-flight limit as the simulation counts it."""

    service: str
    max_inflight: int
    max_queue: int
    status: int
    retry_after_s: float | None
    refusal_stage: str | None = None  # the stage whose work a refusal repeats (`refusal_stage`)


def refusal_stage(spec: Spec, service: str) -> str | None:
    """The stage whose processor time each refusal by `service` costs: its ingress or gateway stage
    with `cpu_ms` (the HTTP exchange: request, body, response; `archkit calibrate` measures it as the
    client's round trip beyond the handler). A refusal is not free: the reference gateway reads the
    whole body before it counts the requests in flight (reference_service/gateway.py, step 3), and
    the 429 goes back over the same exchange. The quiet fidelity run of issue 29 showed the cost:
    at 22.8 req/s offered the answered rate fell from 14.7 to 14.15 req/s while 8.6 req/s were
    refused, and a model that refused for free predicted a shed share 5.7 points low. None: the
    service declares no such stage, so refusals cost nothing."""
    for st in spec.dataflow.stages:
        if st.service == service and st.kind.value in ("ingress", "gateway") and st.cpu_ms:
            return st.id
    return None


def entry_refusal_stage(spec: Spec) -> str | None:
    """The stage whose processor time a token bucket's refusal costs: the `refusal_stage` of the
    service every request enters (the service of the first stage without inbound edges). A rate
    limit answers its 429 on the same HTTP exchange as an admission limit does (Nginx `limit_req`
    reads the request line and headers, then writes the refusal; an API gateway's quota check
    likewise), so a refusal there is no cheaper than the reference gateway's in-flight 429. A spec
    whose limiter runs on other processors than its entry service gives that ingress no `cpu_ms`
    and the refusals cost nothing here."""
    targets = {e.to for e in spec.dataflow.edges}
    entry = next((st for st in spec.dataflow.stages if st.id not in targets and st.service), None)
    return refusal_stage(spec, entry.service) if entry is not None and entry.service else None


def admission_groups(spec: Spec) -> list[AdmissionGroup]:
    """Every service with an in-flight limit: `traffic.admission`, else its `admission.max_inflight`."""
    out: dict[str, AdmissionGroup] = {}
    for a in spec.traffic.admission:
        if a.service is not None and a.max_inflight is not None and a.service not in out:
            out[a.service] = AdmissionGroup(
                a.service,
                a.max_inflight,
                a.max_queue,
                a.rejection.status,
                a.rejection.retry_after_s,
                refusal_stage(spec, a.service),
            )
    for svc in spec.topology.services:
        if svc.admission is not None and svc.id not in out:
            out[svc.id] = AdmissionGroup(
                svc.id, svc.admission.max_inflight, 0, 429, None, refusal_stage(spec, svc.id)
            )
    return list(out.values())[:MAX_GROUPS]


def stage_queue_limits(spec: Spec) -> dict[str, int]:
    """stage id -> the most calls its queue holds, from `traffic.admission` entries with `stage`."""
    out: dict[str, int] = {}
    for a in spec.traffic.admission:
        if a.stage is not None and a.max_queue > 0:
            out[a.stage] = min(a.max_queue, out.get(a.stage, a.max_queue))
    return out


def _bucket(times: np.ndarray, rate: float, burst: int, delay: bool) -> tuple[np.ndarray, np.ndarray]:
    """(admitted time, passed) of each arrival through one token bucket (times sorted)."""
    n = times.shape[0]
    out = times.copy()
    ok = np.ones(n, dtype=bool)
    if delay:
        # Nginx limit_req without nodelay: one request per 1/rate, at most `burst` waiting
        step = 1.0 / rate
        nxt = -math.inf
        for j in range(n):
            t = float(times[j])
            start = max(t, nxt)
            if (start - t) * rate > burst + 1e-9:
                ok[j] = False
                continue
            out[j] = start
            nxt = start + step
        return out, ok
    cap = burst + 1.0
    tokens = cap
    last = float(times[0]) if n else 0.0
    for j in range(n):
        t = float(times[j])
        tokens = min(cap, tokens + (t - last) * rate)
        last = t
        if tokens >= 1.0 - 1e-12:
            tokens -= 1.0
        else:
            ok[j] = False
    return out, ok


def apply_rate_limits(
    limits: list[RateLimit], arr: np.ndarray, visits: dict[str, np.ndarray], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Admitted times and a passed mask for arrivals `arr` (sorted) through `limits` in order.

    `visits[stage]`: whether each request's route visits that stage (scope model)."""
    t = arr.astype(np.float64).copy()
    passed = np.ones(arr.shape[0], dtype=bool)
    for lim in limits:
        if lim.scope == "model":
            sel = passed & visits.get(lim.stage or "", np.zeros(arr.shape[0], dtype=bool))
            groups = [np.flatnonzero(sel)]
        elif lim.scope == "client":
            client = rng.integers(0, lim.clients or 1, arr.shape[0])
            groups = [np.flatnonzero(passed & (client == c)) for c in range(lim.clients or 1)]
        else:
            groups = [np.flatnonzero(passed)]
        for idx in groups:
            if idx.size == 0:
                continue
            order = idx[np.argsort(t[idx], kind="stable")]
            new_t, ok = _bucket(t[order], lim.rate_rps, lim.burst, lim.delay)
            t[order] = new_t
            passed[order[~ok]] = False
    return t, passed


def admitted_rps(spec: Spec, rate_rps: float, reach: dict[str, float] | None = None) -> float:
    """The fluid bound: requests/s the global, per-model and per-client buckets admit of `rate_rps`."""
    rate = rate_rps
    for lim in spec.traffic.rate_limits:
        if lim.scope == "global":
            rate = min(rate, lim.rate_rps)
        elif lim.scope == "client":
            rate = min(rate, lim.rate_rps * (lim.clients or 1))
        elif reach is not None and lim.stage in reach and reach[lim.stage] > 0:
            share = reach[lim.stage]
            over = max(0.0, rate * share - lim.rate_rps)  # that stage's requests beyond its quota
            rate -= over
    return rate
