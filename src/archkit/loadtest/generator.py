"""Did the load generator hold the schedule? A slow generator told apart from a slow server.

Open model only. Per phase the worker says how many requests were scheduled, how many left
(counted in the phase they actually left in) and how many were dropped because every in-flight
slot was busy. Two different stories:

- a slow *server* keeps the slots busy: requests are dropped at the in-flight bound, while the
  generator still processes every scheduled time on time. That is a measured result (drops
  count as failures) and the run is judged as usual;
- a slow *generator* (a saturated core, a starved process) falls behind its own schedule: the
  send lag (actual - scheduled send time) grows, and fewer requests leave in the window than
  were scheduled. Then the numbers describe the generator, not the service: the run is refused
  (the CLI exits 2).
"""

from __future__ import annotations

from typing import Any

from archkit.loadtest import hist
from archkit.loadtest.plan import Plan

KEPT_UP = 0.99  # the achieved rate must reach 99 % of the target (issue: "below 99 % fails loudly")
SLACK_REQUESTS = 1  # one request of rounding at a phase boundary is not a shortfall
# A generator that keeps pace hands each request out within a few ms of its scheduled time
# (send lag P99 3-18 ms measured on this machine, even at load 13): 50 ms behind is a generator
# that fell behind, whatever the in-flight slots say.
BEHIND_MS = 50.0
CPU_SATURATED = 0.9  # a gevent process uses one core at most: ≥ 90 % of it is a saturated generator


def assess(plan: Plan, phases: list[dict], generator: dict, lag: Any) -> dict | None:
    """The generator's own verdict for an open-model run, or None for a closed one."""
    if not plan.open or "scheduled" not in generator:
        return None
    scheduled = generator["scheduled"]
    rows = []
    short: list[dict] = []
    for row in phases:
        i = row["index"]
        want = scheduled[i] if i < len(scheduled) else 0
        left = (row.get("sent") or 0) + (row.get("dropped") or 0)
        dur = row.get("duration_s") or 0.0
        r = {
            "index": i,
            "scheduled": want,
            "sent": row.get("sent") or 0,
            "dropped": row.get("dropped") or 0,
            "target_rps": round(want / dur, 3) if dur else None,
            "achieved_rps": round(left / dur, 3) if dur else None,
        }
        rows.append(r)
        if want and left < KEPT_UP * want - SLACK_REQUESTS:
            short.append(r)
    cpu = generator.get("cpu_s") or 0.0
    wall = generator.get("wall_s") or 0.0
    procs = generator.get("processes") or 1
    cpu_util = round(cpu / (wall * procs), 3) if wall else None
    lag_summary = {k: v for k, v in hist.summary(lag).items() if k != "count"}
    out: dict = {
        "arrival": generator.get("arrival", plan.arrival),
        "max_inflight": generator.get("max_inflight") or plan.users,
        "scheduled": sum(scheduled),
        "sent": generator.get("handed", 0),
        "dropped": generator.get("dropped", 0),
        "send_lag": lag_summary,
        "cpu_per_process": cpu_util,
        "phases": rows,
        "kept_up": not short,
    }
    lag_p99 = lag_summary.get("p99_ms") or 0.0
    saturated = cpu_util is not None and cpu_util >= CPU_SATURATED
    if not short and out["dropped"] and (saturated or lag_p99 > BEHIND_MS):
        # Drops at the in-flight bound mean a slow server only while the generator itself keeps
        # pace; a saturated or lagging generator serves its own users late and fills the slots.
        short = [max(rows, key=lambda r: r["dropped"])]
        out["kept_up"] = False
    if short:
        worst = min(short, key=lambda r: (r["achieved_rps"] or 0) / (r["target_rps"] or 1))
        cpu_note = (
            f"; its CPU was {cpu_util:.0%} of a core" + (" (saturated)" if cpu_util >= CPU_SATURATED else "")
            if cpu_util is not None
            else ""
        )
        out["message"] = (
            f"the load generator could not keep up: in phase {worst['index'] + 1} it reached "
            f"{worst['achieved_rps']:g} of {worst['target_rps']:g} req/s scheduled "
            f"(below {KEPT_UP:.0%}); send lag P99 {lag_summary.get('p99_ms')} ms{cpu_note}. The numbers "
            "describe the generator, not the service: use --workers N, a lower --rate, or a quieter machine"
        )
    elif out["dropped"]:
        out["message"] = (
            f"{out['dropped']} scheduled requests were dropped: all {out['max_inflight']} in-flight slots "
            "were busy, the server answered slower than the offered rate (counted as failures; the "
            "generator held its schedule)"
        )
    return out


def section(gen: dict | None) -> tuple[str, list[str], list[list[str]], list[str]] | None:
    """The report section on the open model: schedule, drops, send lag, generator CPU."""
    if not gen:
        return None
    lag = gen.get("send_lag") or {}
    rows = [
        [
            str(r["index"] + 1),
            str(r["scheduled"]),
            str(r["sent"]),
            str(r["dropped"]),
            f"{r['target_rps']:g}" if r["target_rps"] is not None else "—",
            f"{r['achieved_rps']:g}" if r["achieved_rps"] is not None else "—",
        ]
        for r in gen.get("phases", [])
    ]
    notes = [
        f"{gen['arrival']} arrivals, at most {gen['max_inflight']} requests in flight; latency is measured from "
        "the scheduled send time (free of coordinated omission), the actual-send latency is reported beside it. "
        f"Send lag (actual − scheduled) P50 {lag.get('p50_ms')} ms, P99 {lag.get('p99_ms')} ms, max "
        f"{lag.get('max_ms')} ms; generator CPU {gen.get('cpu_per_process')} of a core per process."
    ]
    fs = gen.get("from_send") or {}
    if fs:
        notes.append(
            f"Latency from the actual send (what a closed-model tool reports): P50 {fs.get('p50_ms')} ms, "
            f"P95 {fs.get('p95_ms')} ms, P99 {fs.get('p99_ms')} ms."
        )
    if gen.get("message"):
        notes.append(gen["message"])
    return (
        "Open model: schedule held?",
        ["phase", "scheduled", "sent", "dropped", "target req/s", "achieved req/s"],
        rows,
        notes,
    )
