"""Runs the worker process(es) for one plan and merges what they stream into one result.

The parent never imports locust or gevent: it starts `python -m archkit.loadtest.worker`
(one local process, or a locust master plus N workers), reads their JSON lines, merges the HDR
histograms, reports progress once a second, asks `phase_check` after each stress step whether to
go on, and kills everything that outlives the plan's deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archkit.errors import ArchkitError
from archkit.loadtest import hist, messages
from archkit.loadtest.bucket import Bucket
from archkit.loadtest.plan import Plan

__all__ = ["Bucket", "RunData", "RunError", "free_port", "run"]


class RunError(ArchkitError, RuntimeError):
    """The load generator could not run (it said why on its log)."""


@dataclass
class RunData:
    """Everything one run measured."""

    plan: Plan
    seconds: list[dict] = field(default_factory=list)  # per-second: t, requests, errors, p50/p99, rate
    phases: list[dict] = field(default_factory=list)
    scenarios: dict[str, Bucket] = field(default_factory=dict)
    total: Bucket = field(default_factory=Bucket)
    wall_s: float = 0.0
    started_at: float = 0.0  # time.time() when users started
    stopped: str = ""
    log: str = ""
    generator: dict = field(default_factory=dict)  # per recording process: cpu_s, wall_s, open-model counts
    lag: Any = field(default_factory=hist.new)  # open model: actual - scheduled send time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reader(idx: int, stream, q: queue.Queue) -> None:
    for line in stream:
        msg = messages.decode(line)
        if msg is not None:
            q.put((idx, msg))
    q.put((idx, messages.Eof()))


def run(
    plan: Plan,
    workdir: Path,
    *,
    workers: int = 0,
    master_host: str | None = None,
    master_port: int = 5557,
    progress: Callable[[dict], None] | None = None,
    phase_check: Callable[[int, dict], bool] | None = None,
    on_start: Callable[[float], None] | None = None,
    on_second: Callable[[dict], None] | None = None,
) -> RunData:
    """Run the plan to its end (or until phase_check says stop); every process is bounded in time."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    plan_path = workdir / "plan.json"
    plan_path.write_text(json.dumps(plan.to_json(), indent=1), encoding="utf-8")
    log_path = workdir / "locust.log"
    base = [sys.executable, "-m", "archkit.loadtest.worker", "--plan", str(plan_path)]
    cmds: list[list[str]] = []
    recording: list[int] = []  # indexes of processes whose requests are recorded
    control = 0  # the process SIGTERM goes to
    if master_host:
        n = max(1, workers)
        cmds = [
            base + ["--role", "worker", "--master-host", master_host, "--master-port", str(master_port)]
            for _ in range(n)
        ]
        recording = list(range(n))
        control = -1  # an external master decides; we stop our own workers only
    elif workers > 0:
        port = free_port()
        cmds = [base + ["--role", "master", "--master-port", str(port), "--expect-workers", str(workers)]]
        cmds += [
            base + ["--role", "worker", "--master-host", "127.0.0.1", "--master-port", str(port)]
            for _ in range(workers)
        ]
        recording = list(range(1, workers + 1))
    else:
        cmds = [base + ["--role", "local"]]
        recording = [0]
    env = dict(os.environ, PYTHONUNBUFFERED="1", ARCHKIT_PAYLOAD_ROOT=plan.payload_root)
    q: queue.Queue = queue.Queue()
    data = RunData(plan=plan)
    logf = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in the finally below
    procs = []
    try:
        for i, cmd in enumerate(cmds):
            p = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=logf, text=True, env=env, start_new_session=True
            )
            procs.append(p)
            threading.Thread(target=_reader, args=(i, p.stdout, q), daemon=True).start()
        _loop(plan, data, procs, recording, control, q, progress, phase_check, on_start, on_second)
    finally:
        for p in procs:
            if p.poll() is None:
                _signal(p, signal.SIGKILL)
            p.wait()
        logf.close()
    data.log = log_path.read_text(encoding="utf-8", errors="replace")[-20000:]
    return data


def _signal(p: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(p.pid, sig)


def _loop(plan, data, procs, recording, control, q, progress, phase_check, on_start, on_second) -> None:
    start_wall = time.monotonic()
    hard_end = start_wall + plan.deadline_s + 30.0  # workers' own deadline + start-up time
    eof: set[int] = set()
    finals: set[int] = set()
    seconds: dict[int, dict] = {}
    sec_seen: dict[int, int] = {}
    phases: dict[int, list] = {}
    t_started = None
    errors: list[str] = []
    stopping = False

    def stop_all() -> None:
        targets = procs if control == -1 else [procs[control]]
        for p in targets:
            if p.poll() is None:
                _signal(p, signal.SIGTERM)

    done_at = None  # when every recording process had sent its final result
    while len(eof) < len(procs):
        if done_at is not None and time.monotonic() > done_at + 5.0:
            for p in procs:  # results are in; a process that does not exit is not waited for
                if p.poll() is None:
                    _signal(p, signal.SIGKILL)
            break
        if time.monotonic() > hard_end:
            for p in procs:
                _signal(p, signal.SIGKILL)
            data.stopped = data.stopped or "killed at the hard deadline"
            break
        try:
            idx, ev = q.get(timeout=0.25)
        except queue.Empty:
            if all(p.poll() is not None for p in procs) and q.empty():
                break
            continue
        if isinstance(ev, messages.Eof):
            eof.add(idx)
        elif isinstance(ev, messages.Failure):
            errors.append(ev.message)
        elif isinstance(ev, messages.Started) and t_started is None:
            t_started = time.monotonic()
            data.started_at = time.time()
            if on_start:
                on_start(data.started_at)
        elif isinstance(ev, messages.Tick) and idx in recording:
            s = ev.second
            b = seconds.setdefault(s, {"bucket": Bucket(), "users": 0, "rate": ev.rate})
            b["bucket"].add(ev.window)
            b["users"] += ev.users or 0
            sec_seen[s] = sec_seen.get(s, 0) + 1
            if sec_seen[s] == len(recording):
                row = _second_row(s, b)
                if on_second:
                    on_second(row)
                if progress:
                    done = s + 1
                    progress(
                        {
                            **row,
                            "time_left_s": max(0.0, plan.duration_s - done),
                            "total_requests": sum(x["bucket"].requests for x in seconds.values()),
                        }
                    )
        elif isinstance(ev, messages.PhaseEnd) and idx in recording:
            i = ev.index
            phases.setdefault(i, []).append(ev.window)
            if len(phases[i]) == len(recording):
                merged = Bucket()
                for w in phases[i]:
                    merged.add(w)
                ph = plan.phases[i]
                row = {
                    "index": i,
                    "offered_rps": ph.rate_rps,
                    "duration_s": ph.duration_s,
                    **merged.stats(ph.duration_s),
                }
                if plan.open:
                    row["sent"] = merged.sent
                    row["dropped"] = merged.dropped
                data.phases.append(row)
                if phase_check and not stopping and i + 1 < len(plan.phases) and not phase_check(i, row):
                    stopping = True
                    data.stopped = f"stopped after step {i + 1}: budgets broken"
                    stop_all()
        elif isinstance(ev, messages.Final):
            finals.add(idx)
            if all(i in finals for i in recording):
                done_at = time.monotonic()
            if idx in recording:
                _merge_generator(data, ev)
                for name, w in ev.scenarios.items():
                    data.scenarios.setdefault(name, Bucket()).add(w)
                if not data.stopped:
                    data.stopped = ev.stopped
    data.wall_s = round(time.monotonic() - (t_started or start_wall), 3)
    data.seconds = [_second_row(s, seconds[s]) for s in sorted(seconds)]
    for b in data.scenarios.values():
        data.total.merge(b)
    data.total.dropped = data.generator.get("dropped", 0)
    if not data.scenarios and errors:
        raise RunError("; ".join(errors))
    if t_started is None:
        raise RunError("the load generator did not start; see its log")


def _merge_generator(data: RunData, ev: messages.Final) -> None:
    """Sum what each recording process says about itself (CPU, open-model counts)."""
    g = data.generator
    g["processes"] = g.get("processes", 0) + 1
    g["cpu_s"] = round(g.get("cpu_s", 0.0) + ev.cpu_s, 3)
    g["wall_s"] = max(g.get("wall_s", 0.0), ev.wall_s)
    op = ev.open
    if op is None:
        return
    g["arrival"] = op.arrival
    sched = g.setdefault("scheduled", [0] * len(op.scheduled))
    for i, n in enumerate(op.scheduled):
        if i < len(sched):
            sched[i] += n
    g["handed"] = g.get("handed", 0) + op.handed
    g["dropped"] = g.get("dropped", 0) + op.dropped
    g["max_inflight"] = g.get("max_inflight", 0) + op.max_inflight
    if op.lag:
        data.lag.add(hist.decode(op.lag))


def _second_row(s: int, b: dict) -> dict:
    bucket: Bucket = b["bucket"]
    summ = hist.summary(bucket.latency)
    return {
        "t": s + 1,
        "requests": bucket.requests,
        "errors": bucket.errors,
        "statuses": dict(sorted(bucket.statuses.items())),
        "p50_ms": summ["p50_ms"],
        "p99_ms": summ["p99_ms"],
        "max_ms": summ["max_ms"],
        "offered_rps": b.get("rate"),
        "users": b.get("users"),
        "dropped": bucket.dropped,
    }
