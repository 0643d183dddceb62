"""The load-generator process: runs a generated locustfile with locust as a library and streams results.

Run as `python -m archkit.loadtest.worker --plan PLAN.json --role local|master|worker`.
gevent patches the interpreter here, first, before anything imports `ssl` (design principle D4, docs/sources.md), which is
why this is its own process. Every request's latency goes, unrounded, into HDR histograms
(locust's own stats round to buckets), and every registered measure (archkit.loadtest.measures:
TTFT, inter-token gaps, ... when a protocol streams) into its own. The process writes the typed
messages of archkit.loadtest.messages on stdout, one JSON line each: `Started`, a `Tick` each
second, a `PhaseEnd` per offered-rate phase, one `Final` with a `Window` per scenario.

Open model (plan `arrival` constant or poisson, archkit.loadtest.arrivals): the runtime's
pacer is replaced by an `OpenPacer` whose scheduler greenlet hands each scheduled send time to
a free user; when every user (the declared maximum in flight) is busy the request is counted
as dropped, never skipped silently. `latency` then runs from the scheduled send time (free of
coordinated omission) and `from_send` from the actual send.
Closed model (`arrival: closed`): the runtime's `ClosedPacer`, users bound the rate.

Every socket this process opens may connect to loopback addresses only (a redirect or an
absolute URL to anywhere else fails before connect(); the loopback rule of archkit.loadtest.safety).

With ARCHKIT_RAW_LATENCIES=PATH set, every latency is also written to PATH.<pid> (for tests
that check the histograms against the raw list).

SIGTERM stops the test early (the parent does it when a stress step broke its budget). The
process always stops by itself at the plan's deadline and after max_requests requests.
"""

from __future__ import annotations

from gevent import monkey  # type: ignore[import-untyped]  # first: gevent must patch before anything imports ssl

monkey.patch_all()

import argparse
import importlib.util
import json
import os
import random
import resource
import signal
import socket
import sys
import time
from typing import Any

import gevent  # type: ignore[import-untyped]
import locust  # before requests and friends (design principle D4)
from locust.env import Environment

from archkit.loadtest import arrivals, hist
from archkit.loadtest.bucket import Bucket
from archkit.loadtest.measures import STREAM_KEY, Sample, StreamTrace, load_all
from archkit.loadtest.messages import Failure, Final, Message, OpenCounts, PhaseEnd, Started, Tick
from archkit.loadtest.plan import Phase, Plan
from archkit.loadtest.runtime.core import Runtime
from archkit.loadtest.runtime.pacing import ClosedPacer, OpenPacer, Pacer
from archkit.loadtest.safety import is_loopback_address

DRAIN_S = 15.0  # how long requests in flight at the end may take to finish
SPAWN_WAIT_S = 3.0  # open model: the schedule starts once the users are spawned (or after this)


class NonLoopbackConnect(ConnectionRefusedError):
    """A socket of the load generator tried to reach a non-loopback address."""


def guard_sockets() -> None:
    """Refuse, before any connect(), every connection to a non-loopback address from this process.

    The URL checks happen before the run; this catches what they cannot see: redirects that
    geventhttpclient follows and anything a locustfile builds at run time.
    """
    cls = socket.socket  # gevent's socket class after patch_all
    connect, connect_ex = cls.connect, cls.connect_ex

    def refuse(address: Any) -> None:
        raise NonLoopbackConnect(
            f"archkit: refusing to connect to non-loopback address {address!r} (a redirect or an "
            "absolute URL leaving 127.0.0.0/8, ::1)"
        )

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not is_loopback_address(address):
            refuse(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not is_loopback_address(address):
            refuse(address)
        return connect_ex(self, address)

    cls.connect = guarded_connect  # type: ignore[method-assign, assignment]
    cls.connect_ex = guarded_connect_ex  # type: ignore[method-assign, assignment]


class Recorder:
    """Per-request hook: exact latencies and measures per scenario, per second and per phase."""

    def __init__(self, out: Any, raw: Any = None) -> None:
        self.out = out
        self.raw = raw  # optional file: every latency, unrounded, one per line (for verification)
        self.multi_phase = True
        self.t0: float | None = None
        self.total = 0
        self.pacer: Pacer = Pacer()
        self.measures = list(load_all().values())
        self.scen: dict[str, Bucket] = {}
        self.sec = Bucket()
        self.sec_index = 0
        self.phase = Bucket()

    def targets(self, sc: Bucket) -> tuple[Bucket, ...]:
        # a single-phase run's phase window would equal the total: skip it (3 records -> 2 per request)
        return (sc, self.sec, self.phase) if self.multi_phase else (sc, self.sec)

    def emit(self, msg: Message) -> None:
        self.out.write(msg.to_line())
        self.out.flush()

    def on_drop(self) -> None:
        if self.t0 is None:
            return
        self.sec.dropped += 1
        self.phase.dropped += 1

    def on_sent(self) -> None:
        """One scheduled request left (counted in the phase it actually left in)."""
        self.phase.sent += 1

    def on_request(
        self,
        request_type: Any,
        name: str,
        response_time: float,
        response_length: Any,
        response: Any = None,
        context: Any = None,
        exception: BaseException | None = None,
        **_kw: Any,
    ) -> None:
        if self.t0 is None:
            return
        self.total += 1
        due = self.pacer.take()
        # open model: latency counts from the scheduled send time (the wait a closed model omits)
        judged = max(response_time, (time.monotonic() - due) * 1000.0) if due is not None else response_time
        if self.raw is not None:
            self.raw.write(f"{name}\t{response_time!r}\t{int(exception is not None)}\t{judged!r}\n")
        code = getattr(response, "status_code", None)
        status = str(int(code) if isinstance(code, int) else 0)
        stream = context.get(STREAM_KEY) if isinstance(context, dict) else None
        sample = Sample(
            judged, response_time, exception is not None, stream if isinstance(stream, StreamTrace) else None
        )
        values = [
            (m, m.values(sample), m.counts(sample))
            for m in self.measures
            if not sample.failed or m.failed_too
        ]
        sc = self.scen.get(name)
        if sc is None:
            sc = self.scen[name] = Bucket()
        for b in self.targets(sc):
            b.requests += 1
            b.statuses[status] = b.statuses.get(status, 0) + 1
            hist.record_ms(b.latency, judged)
            if due is not None:
                hist.record_ms(b.from_send, response_time)
            if exception is not None:
                b.errors += 1
                hist.record_ms(b.error_latency, judged)
            for m, vals, counts in values:
                if vals:
                    h = b.measures.get(m.name)
                    if h is None:
                        h = b.measures[m.name] = hist.new()
                    for v in vals:
                        hist.record_ms(h, v)
                for k, n in counts.items():
                    b.totals[k] = b.totals.get(k, 0) + n
        if exception is not None:
            msg = str(exception)[:200] or type(exception).__name__
            if len(sc.messages) < 20 or msg in sc.messages:
                sc.messages[msg] = sc.messages.get(msg, 0) + 1

    def flush_second(self, users: int, rate: float | None) -> None:
        b, self.sec = self.sec, Bucket()
        w = b.window()
        # a tick carries counts and the latency histogram only: the per-second rows need no more
        w.error_latency, w.from_send, w.measures, w.totals = "", "", {}, {}
        self.emit(Tick(self.sec_index, w, users, rate))
        self.sec_index += 1

    def flush_phase(self, i: int, rate: float | None) -> None:
        b, self.phase = self.phase, Bucket()
        if not self.multi_phase:  # the one phase is everything recorded so far
            for sc in self.scen.values():
                b.merge(sc)
        self.emit(PhaseEnd(i, rate, b.window()))

    def final(self, stopped: str, cpu_s: float, wall_s: float, open_counts: OpenCounts | None) -> None:
        scenarios = {k: v.window() for k, v in sorted(self.scen.items())}
        self.emit(Final(stopped, scenarios, cpu_s, wall_s, open_counts))


def load_locustfile(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("archkit_locustfile", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["archkit_locustfile"] = mod
    spec.loader.exec_module(mod)
    return mod


def runtime_of(mod: Any) -> Runtime | None:
    """The locustfile's `RUNTIME` (a generated file wires its plan to one), if it has one."""
    rt = getattr(mod, "RUNTIME", None)
    return rt if isinstance(rt, Runtime) else None


def _spans(phases: list[Phase]) -> list[arrivals.Span]:
    return [arrivals.Span(p.start_s, p.duration_s, p.rate_rps or 0.0) for p in phases]


class WorkerRun:
    """One load-generator process's test: the locust runner, the pacer and the tickers that
    report each second and phase, and how the test stops (duration, request bound, signal)."""

    def __init__(self, plan: Plan, role: str, master_host: str, master_port: int, rec: Recorder, rt: Runtime):
        self.plan, self.role, self.rec, self.rt = plan, role, rec, rt
        self.phases = plan.phases
        self.is_open = plan.arrival in arrivals.ARRIVALS and all(p.rate_rps for p in plan.phases)
        # At the end no new request starts and the ones in flight may finish (up to DRAIN_S):
        # cutting them off would drop exactly the slowest requests and bias the percentiles low.
        env = Environment(
            user_classes=[rt.user_class()], events=locust.events, host=plan.host, stop_timeout=DRAIN_S
        )
        self.env = env
        self.pacer: OpenPacer | None = None
        if self.is_open:
            self.pacer = OpenPacer(rec.on_sent, rec.on_drop)
            rt.use_pacer(self.pacer)
            rec.pacer = self.pacer
        elif isinstance(rt.pacer, ClosedPacer):
            steps = [(p.start_s, p.rate_rps or 0.0) for p in self.phases] if len(self.phases) > 1 else []
            rt.pacer.configure(self.phases[0].rate_rps or 0, plan.users, steps)
        # every user at once: an open model's users are slots, not a ramp
        self.spawn_rate = max(plan.users, 1) * (50 if self.is_open else 1)
        self.deadline = time.monotonic() + plan.duration_s + DRAIN_S + 10.0 + SPAWN_WAIT_S
        self.why = "duration"  # why the test stopped
        self.share = 1.0  # this process's share of the offered rate (distributed runs)
        self.started: list[gevent.Greenlet] = []
        self.cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        self.runner: Any
        if role == "master":
            self.runner = env.create_master_runner("127.0.0.1", master_port)
        elif role == "worker":
            self.runner = env.create_worker_runner(master_host, master_port)
        else:
            self.runner = env.create_local_runner()

    def quit(self, why: str, drain_s: float = DRAIN_S) -> None:
        if self.why == "duration":
            self.why = why
        self.rt.pacer.close()
        if self.pacer is not None:  # let the answers in flight arrive, then free the parked users
            self.pacer.drain(drain_s)
            self.pacer.release()
        self.runner.quit()

    def rate_of_second(self, index: int) -> float | None:
        """The offered rate in the middle of second `index` (the one a tick reports on)."""
        mid = index + 0.5
        rate = None
        for p in self.phases:
            if p.start_s <= mid:
                rate = p.rate_rps
        return rate

    def on_request(self, **kw: Any) -> None:
        self.rec.on_request(**kw)
        if self.rec.total >= self.plan.max_requests and not self.rt.pacer.closed:
            self.rt.pacer.close()  # the request bound (per process): nothing new is sent
            if self.why == "duration":
                self.why = "max_requests"
            if self.role == "local":
                gevent.spawn(self.quit, "max_requests")

    def wait_spawned(self) -> None:
        """Open model: start the schedule once this process's users exist (stable count)."""
        end = time.monotonic() + SPAWN_WAIT_S
        last, stable_since = -1, time.monotonic()
        while time.monotonic() < end:
            n = self.runner.user_count
            if self.role == "local" and n >= self.plan.users:
                break
            if n != last:
                last, stable_since = n, time.monotonic()
            elif n > 0 and time.monotonic() - stable_since > 0.3:
                break
            gevent.sleep(0.02)
        # in a distributed run each process sends its users' share of the rate
        self.share = min(1.0, max(self.runner.user_count, 1) / max(self.plan.users, 1))

    def tickers(self) -> None:
        """Report each second and each phase; phases and seconds are timed from the start of the
        test on this process."""
        rec, phases = self.rec, self.phases
        if self.is_open:
            self.wait_spawned()
        t0 = time.monotonic()
        self.rt.pacer.start(t0)
        rec.t0 = t0
        rec.emit(Started())
        if self.pacer is not None:
            times = arrivals.send_times(
                _spans(phases), self.plan.arrival, self.plan.seed + os.getpid(), self.share
            )
            gevent.spawn(self.pacer.run, times, t0)
        next_sec = t0 + 1.0
        bounds = [t0 + p.start_s + p.duration_s for p in phases]
        i = 0
        while time.monotonic() < self.deadline:
            now = time.monotonic()
            wake = min(next_sec, bounds[i] if i < len(bounds) else next_sec)
            gevent.sleep(max(0.0, wake - now))
            now = time.monotonic()
            if now >= next_sec - 1e-4:
                rec.flush_second(self.runner.user_count, self.rate_of_second(rec.sec_index))
                next_sec += 1.0
            if i < len(bounds) and now >= bounds[i] - 1e-4:
                rec.flush_phase(i, phases[i].rate_rps)
                i += 1
                if i == len(bounds):
                    self.rt.pacer.close()  # the planned time is over: nothing new is sent
                    if self.pacer is not None:
                        self.pacer.drain(DRAIN_S)
                        self.pacer.release()
                    if self.role == "local":
                        self.quit("duration")
                    return

    def on_test_start(self, **_kw: Any) -> None:
        if not self.started:
            self.started.append(gevent.spawn(self.tickers))

    def start_master(self, expect_workers: int) -> bool:
        """Wait for the locust workers, start them, and stop the test at its end; False when too
        few connected."""
        runner, rec = self.runner, self.rec
        end = time.monotonic() + 30.0
        while len(runner.clients.ready) < expect_workers and time.monotonic() < end:
            gevent.sleep(0.1)
        if len(runner.clients.ready) < expect_workers:
            rec.emit(
                Failure(
                    f"only {len(runner.clients.ready)} of {expect_workers} locust workers connected within 30 s"
                )
            )
            runner.quit()
            return False
        runner.start(self.plan.users, spawn_rate=self.spawn_rate)
        rec.emit(Started())

        def stop_at_end() -> None:
            gevent.sleep(self.plan.duration_s + 0.5 + (SPAWN_WAIT_S if self.is_open else 0.0))
            self.quit("duration")

        gevent.spawn(stop_at_end)
        return True

    def run(self, expect_workers: int) -> int:
        """Run the test to its end; the process's exit code."""
        plan, role, runner = self.plan, self.role, self.runner
        # signal handlers run on the hub, which must not wait: the quit runs in its own greenlet
        gevent.signal_handler(signal.SIGTERM, lambda: gevent.spawn(self.quit, "stopped by the runner"))
        gevent.signal_handler(signal.SIGINT, lambda: gevent.spawn(self.quit, "interrupted", 0.0))
        gevent.spawn_later(plan.duration_s + DRAIN_S + 10.0 + SPAWN_WAIT_S, self.quit, "deadline", 0.0)
        self.env.events.request.add_listener(self.on_request)
        if role in ("local", "worker"):
            self.env.events.test_start.add_listener(self.on_test_start)
        if role == "master":
            if not self.start_master(expect_workers):
                return 2
        elif role == "local":
            runner.start(plan.users, spawn_rate=self.spawn_rate)
        runner.greenlet.join()
        if self.started:
            self.started[0].kill(block=False)
            # a partial last second (users stopping) would read as a drop in the plots: not reported
            # per second, but its requests are in the scenario totals
        self.finish()
        return 0

    def finish(self) -> None:
        """The final message: the totals, this process's CPU and wall time, the open model's counts."""
        plan, rec, pacer = self.plan, self.rec, self.pacer
        if rec.raw is not None:
            rec.raw.close()
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu0 = self.cpu0
        cpu_s = round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3)
        wall_s = round(time.monotonic() - rec.t0, 3) if rec.t0 else 0.0
        open_counts = None
        if pacer is not None:
            open_counts = OpenCounts(
                arrival=plan.arrival,
                scheduled=arrivals.counts(
                    _spans(self.phases), plan.arrival, plan.seed + os.getpid(), self.share
                ),
                handed=pacer.handed,
                dropped=pacer.dropped,
                lag=hist.encode(pacer.lag),
                max_inflight=self.runner.user_count or plan.users,
            )
        if self.role != "master":
            rec.final(self.why, cpu_s, wall_s, open_counts)
        else:
            rec.emit(Final(self.why, recording=False))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m archkit.loadtest.worker")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--role", choices=["local", "master", "worker"], default="local")
    ap.add_argument("--master-host", default="127.0.0.1")
    ap.add_argument("--master-port", type=int, default=5557)
    ap.add_argument("--expect-workers", type=int, default=1)
    args = ap.parse_args(argv)
    guard_sockets()
    with open(args.plan, encoding="utf-8") as fh:
        plan = Plan.from_json(json.load(fh))
    random.seed(plan.seed + os.getpid())
    os.environ.setdefault("ARCHKIT_PAYLOAD_ROOT", plan.payload_root)
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else that prints must not corrupt the JSON-lines stream
    raw_path = os.environ.get("ARCHKIT_RAW_LATENCIES")
    raw = open(f"{raw_path}.{os.getpid()}", "w", encoding="utf-8") if raw_path else None  # noqa: SIM115 - open for the run
    rec = Recorder(out, raw)
    rec.multi_phase = len(plan.phases) > 1
    rt = runtime_of(load_locustfile(plan.locustfile))
    if rt is None:
        rec.emit(Failure(f"{plan.locustfile} has no RUNTIME (not a locustfile archkit generated)"))
        return 2
    return WorkerRun(plan, args.role, args.master_host, args.master_port, rec, rt).run(args.expect_workers)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written: leave now. Interpreter shutdown can hang on client threads that
    # gevent does not own (grpcio's channel threads under grpc.experimental.gevent).
    os._exit(code)
