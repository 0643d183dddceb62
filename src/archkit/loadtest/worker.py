"""The load-generator process: runs a generated locustfile with locust as a library and streams results.

Run as `python -m archkit.loadtest.worker --plan PLAN.json --role local|master|worker`.
gevent patches the interpreter here, first, before anything imports `ssl` (design principle D4, docs/sources.md), which is
why this is its own process. Every request's latency goes, unrounded, into HDR histograms
(locust's own stats round to buckets); the process writes JSON lines on stdout:

- `{"ev": "started"}` when users start;
- `{"ev": "tick", "s": second, "n", "err", "st": {status: n}, "h": hdr, "users", "rate"}` each second;
- `{"ev": "phase", "i", "rate", "n", "err", "st", "h", "he"}` at the end of each offered-rate phase
  (`h` every request, `he` the failed ones);
- `{"ev": "final", "scenarios": {id: {"n", "err", "st", "h", "he", "msgs"}}, "stopped": why,
  "open": {"scheduled", "handed", "dropped", "lag", "max_inflight"}, "cpu_s", "wall_s"}`.

Open model (plan `arrival` constant or poisson, archkit.loadtest.arrivals): a scheduler greenlet
hands each scheduled send time to a free user; when every user (the declared maximum in flight)
is busy the request is counted as dropped (`dr`), never skipped silently. `h` then holds latency
from the scheduled send time (free of coordinated omission) and `ha` from the actual send.
Closed model (`arrival: closed`): the locustfile's own pacer, users bound the rate.

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
from collections import deque
from typing import Any

import gevent  # type: ignore[import-untyped]
import locust  # before requests and friends (design principle D4)
from gevent.event import AsyncResult  # type: ignore[import-untyped]
from locust.env import Environment
from locust.exception import StopUser

from archkit.loadtest import arrivals, hist
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


class OpenPacer:
    """Open model: requests leave at their scheduled times, whatever is in flight.

    The users are the declared maximum in flight: a free user waits in `acquire` until the
    scheduler hands it a send time. A scheduled time that finds every user busy is a dropped
    request (counted, never skipped silently). Stands in for the locustfile's closed-model
    PACER (same `acquire`, `closed`, `t0`, `configure`).
    """

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.free: deque[tuple[gevent.Greenlet, AsyncResult]] = deque()
        self.sched: dict[Any, float] = {}  # greenlet -> its request's scheduled time (monotonic)
        self.closed = False
        self.released = False
        self.t0: float | None = None
        self.handed = 0
        self.dropped = 0
        self.lag = hist.new()  # actual send - scheduled send

    def configure(self, *_args: Any) -> None:
        """The schedule is given to `run`; the locustfile's arguments do not apply."""

    def acquire(self, user: Any) -> None:
        # After the end a user parks here until the runner stops it: a user stopping by itself
        # (StopUser) runs locust's bookkeeping while other answers are still due.
        if self.released:  # a user that finished after release(): nobody would ever wake it
            raise StopUser()
        ar: AsyncResult = AsyncResult()
        me = gevent.getcurrent()
        self.free.append((me, ar))  # after close() only release() sets it
        due = ar.get()
        if due is None:
            raise StopUser()
        self.sched[me] = due
        lag_ms = (time.monotonic() - due) * 1000.0
        hist.record_ms(self.lag, max(lag_ms, 0.001))

    def take(self) -> float | None:
        """The scheduled send time of the request this greenlet just finished, if paced here."""
        return self.sched.pop(gevent.getcurrent(), None)

    def run(self, times: Any, t0: float) -> None:
        """Hand each scheduled time (seconds from t0) to a free user, or count it dropped."""
        for t in times:
            due = t0 + t
            wait = due - time.monotonic()
            # behind schedule: still yield, so users that just finished can queue up again
            gevent.sleep(wait if wait > 0 else 0)
            if self.closed:
                return
            while self.free and self.free[0][0].dead:
                self.free.popleft()
            if self.free:
                self.free.popleft()[1].set(due)
                self.handed += 1
                self.rec.on_sent()
            else:
                self.dropped += 1
                self.rec.on_drop()

    def close(self) -> None:
        """No request is handed out any more; waiting users stay parked (see acquire)."""
        self.closed = True

    def release(self) -> None:
        """Let every parked user stop (StopUser), once nothing is in flight any more."""
        self.closed = self.released = True
        while self.free:
            self.free.popleft()[1].set(None)

    def drain(self, limit_s: float) -> None:
        """Wait (at most limit_s) for the requests in flight: stopping the runner blocks the loop,
        and a response that arrives meanwhile would be timed late."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end and any(not g.dead for g in self.sched):
            gevent.sleep(0.005)


class Recorder:
    """Per-request hook: exact latencies per scenario, per second and per phase."""

    def __init__(self, out: Any, raw: Any = None) -> None:
        self.out = out
        self.raw = raw  # optional file: every latency, unrounded, one per line (for verification)
        self.multi_phase = True
        self.t0: float | None = None
        self.total = 0
        self.pacer: OpenPacer | None = None
        self.scen: dict[str, dict] = {}
        self.sec = self._bucket()
        self.sec_index = 0
        self.phase = self._bucket()
        self.phase_dr = 0
        self.phase_sent = 0

    @staticmethod
    def _bucket() -> dict:
        return {"n": 0, "err": 0, "st": {}, "h": hist.new(), "he": hist.new(), "ha": hist.new(), "dr": 0}

    def targets(self, sc: dict) -> tuple:
        # a single-phase run's phase histogram would equal the total: skip it (3 records -> 2 per request)
        return (sc, self.sec, self.phase) if self.multi_phase else (sc, self.sec)

    def emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.out.flush()

    def on_drop(self) -> None:
        if self.t0 is None:
            return
        self.sec["dr"] += 1
        self.phase_dr += 1

    def on_sent(self) -> None:
        """One scheduled request left (counted in the phase it actually left in)."""
        self.phase_sent += 1

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
        due = self.pacer.take() if self.pacer is not None else None
        # open model: latency counts from the scheduled send time (the wait a closed model omits)
        judged = max(response_time, (time.monotonic() - due) * 1000.0) if due is not None else response_time
        if self.raw is not None:
            self.raw.write(f"{name}\t{response_time!r}\t{int(exception is not None)}\t{judged!r}\n")
        status = getattr(response, "status_code", None)
        status = int(status) if isinstance(status, int) else 0
        sc = self.scen.get(name)
        if sc is None:
            sc = self.scen[name] = {**self._bucket(), "msgs": {}}
        for b in self.targets(sc):
            b["n"] += 1
            b["st"][status] = b["st"].get(status, 0) + 1
            hist.record_ms(b["h"], judged)
            if due is not None:
                hist.record_ms(b["ha"], response_time)
            if exception is not None:
                b["err"] += 1
                hist.record_ms(b["he"], judged)
        if exception is not None:
            msg = str(exception)[:200] or type(exception).__name__
            if len(sc["msgs"]) < 20 or msg in sc["msgs"]:
                sc["msgs"][msg] = sc["msgs"].get(msg, 0) + 1

    def _hists(self, b: dict) -> dict:
        out = {"h": hist.encode(b["h"]), "he": hist.encode(b["he"])}
        if b["ha"].get_total_count():
            out["ha"] = hist.encode(b["ha"])
        return out

    def flush_second(self, users: int, rate: float | None) -> None:
        b, self.sec = self.sec, self._bucket()
        self.emit(
            ev="tick",
            s=self.sec_index,
            n=b["n"],
            err=b["err"],
            dr=b["dr"],
            st=b["st"],
            h=hist.encode(b["h"]),
            users=users,
            rate=rate,
        )
        self.sec_index += 1

    def flush_phase(self, i: int, rate: float | None) -> None:
        b, self.phase = self.phase, self._bucket()
        dropped, self.phase_dr = self.phase_dr, 0
        sent, self.phase_sent = self.phase_sent, 0
        if not self.multi_phase:  # the one phase is everything recorded so far
            for sc in self.scen.values():
                b["n"] += sc["n"]
                b["err"] += sc["err"]
                for k, v in sc["st"].items():
                    b["st"][k] = b["st"].get(k, 0) + v
                for key in ("h", "he", "ha"):
                    b[key].add(sc[key])
        self.emit(
            ev="phase",
            i=i,
            rate=rate,
            n=b["n"],
            err=b["err"],
            dr=dropped,
            sent=sent,
            st=b["st"],
            **self._hists(b),
        )

    def final(self, stopped: str, extra: dict) -> None:
        self.emit(
            ev="final",
            stopped=stopped,
            scenarios={
                k: {"n": v["n"], "err": v["err"], "st": v["st"], "msgs": v["msgs"], **self._hists(v)}
                for k, v in sorted(self.scen.items())
            },
            **extra,
        )


def load_locustfile(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("archkit_locustfile", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["archkit_locustfile"] = mod
    spec.loader.exec_module(mod)
    return mod


def user_classes(mod: Any) -> list:
    from locust import User

    return [
        v
        for v in vars(mod).values()
        if isinstance(v, type)
        and issubclass(v, User)
        and not getattr(v, "abstract", True)
        and v.__module__ == mod.__name__
    ]


def _spans(phases: list[dict]) -> list[arrivals.Span]:
    return [arrivals.Span(p["start_s"], p["duration_s"], p["rate_rps"] or 0.0) for p in phases]


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
        plan = json.load(fh)
    random.seed(plan.get("seed", 1) + os.getpid())
    os.environ.setdefault("ARCHKIT_PAYLOAD_ROOT", plan["payload_root"])
    out = sys.stdout
    sys.stdout = sys.stderr  # anything else that prints must not corrupt the JSON-lines stream
    raw_path = os.environ.get("ARCHKIT_RAW_LATENCIES")
    raw = open(f"{raw_path}.{os.getpid()}", "w", encoding="utf-8") if raw_path else None  # noqa: SIM115 - open for the run
    rec = Recorder(out, raw)
    rec.multi_phase = len(plan["phases"]) > 1
    arrival = plan.get("arrival", "closed")
    is_open = arrival in arrivals.ARRIVALS and all(p["rate_rps"] for p in plan["phases"])

    mod = load_locustfile(plan["locustfile"])
    classes = user_classes(mod)
    if not classes:
        rec.emit(ev="error", message=f"no runnable user class in {plan['locustfile']}")
        return 2
    # At the end no new request starts and the ones in flight may finish (up to DRAIN_S): cutting
    # them off would drop exactly the slowest requests and bias the percentiles low.
    env = Environment(user_classes=classes, events=locust.events, host=plan["host"], stop_timeout=DRAIN_S)
    phases = plan["phases"]
    pacer = None
    if is_open:
        pacer = OpenPacer(rec)
        mod.PACER = pacer  # the users' task calls PACER.acquire(self): now the open-model one
        rec.pacer = pacer
    else:
        steps = [(p["start_s"], p["rate_rps"] or 0) for p in phases] if len(phases) > 1 else []
        mod.PACER.configure(phases[0]["rate_rps"] or 0, plan["users"], steps)
    # every user at once: an open model's users are slots, not a ramp
    spawn_rate = max(plan["users"], 1) * (50 if is_open else 1)
    deadline = time.monotonic() + plan["duration_s"] + DRAIN_S + 10.0 + SPAWN_WAIT_S
    stopped = {"why": "duration"}
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)

    runner: Any
    if args.role == "master":
        runner = env.create_master_runner("127.0.0.1", args.master_port)
    elif args.role == "worker":
        runner = env.create_worker_runner(args.master_host, args.master_port)
    else:
        runner = env.create_local_runner()

    def close_pacer() -> None:
        mod.PACER.closed = True
        if pacer is not None:
            pacer.close()

    def quit_(why: str, drain_s: float = DRAIN_S) -> None:
        if stopped["why"] == "duration":
            stopped["why"] = why
        close_pacer()
        if pacer is not None:  # let the answers in flight arrive, then free the parked users
            pacer.drain(drain_s)
            pacer.release()
        runner.quit()

    # signal handlers run on the hub, which must not wait: the quit runs in its own greenlet
    gevent.signal_handler(signal.SIGTERM, lambda: gevent.spawn(quit_, "stopped by the runner"))
    gevent.signal_handler(signal.SIGINT, lambda: gevent.spawn(quit_, "interrupted", 0.0))
    gevent.spawn_later(plan["duration_s"] + DRAIN_S + 10.0 + SPAWN_WAIT_S, quit_, "deadline", 0.0)

    def rate_of_second(index: int) -> float | None:
        """The offered rate in the middle of second `index` (the one a tick reports on)."""
        mid = index + 0.5
        rate = None
        for p in phases:
            if p["start_s"] <= mid:
                rate = p["rate_rps"]
        return rate

    def on_request(**kw: Any) -> None:
        rec.on_request(**kw)
        if rec.total >= plan["max_requests"] and not mod.PACER.closed:
            close_pacer()  # the request bound (per process): nothing new is sent
            if stopped["why"] == "duration":
                stopped["why"] = "max_requests"
            if args.role == "local":
                gevent.spawn(quit_, "max_requests")

    share = {"v": 1.0}

    def wait_spawned() -> None:
        """Open model: start the schedule once this process's users exist (stable count)."""
        end = time.monotonic() + SPAWN_WAIT_S
        last, stable_since = -1, time.monotonic()
        while time.monotonic() < end:
            n = runner.user_count
            if args.role == "local" and n >= plan["users"]:
                break
            if n != last:
                last, stable_since = n, time.monotonic()
            elif n > 0 and time.monotonic() - stable_since > 0.3:
                break
            gevent.sleep(0.02)
        # in a distributed run each process sends its users' share of the rate
        share["v"] = min(1.0, max(runner.user_count, 1) / max(plan["users"], 1))

    def tickers() -> None:
        # Phases and seconds are timed from the start of the test on this process.
        if is_open:
            wait_spawned()
        t0 = time.monotonic()
        mod.PACER.t0 = t0
        rec.t0 = t0
        rec.emit(ev="started")
        if pacer is not None:
            times = arrivals.send_times(
                _spans(phases), arrival, plan.get("seed", 1) + os.getpid(), share["v"]
            )
            gevent.spawn(pacer.run, times, t0)
        next_sec = t0 + 1.0
        bounds = [t0 + p["start_s"] + p["duration_s"] for p in phases]
        i = 0
        while time.monotonic() < deadline:
            now = time.monotonic()
            wake = min(next_sec, bounds[i] if i < len(bounds) else next_sec)
            gevent.sleep(max(0.0, wake - now))
            now = time.monotonic()
            if now >= next_sec - 1e-4:
                rec.flush_second(runner.user_count, rate_of_second(rec.sec_index))
                next_sec += 1.0
            if i < len(bounds) and now >= bounds[i] - 1e-4:
                rec.flush_phase(i, phases[i]["rate_rps"])
                i += 1
                if i == len(bounds):
                    close_pacer()  # the planned time is over: nothing new is sent
                    if pacer is not None:
                        pacer.drain(DRAIN_S)
                        pacer.release()
                    if args.role == "local":
                        quit_("duration")
                    return

    env.events.request.add_listener(on_request)
    started: list[gevent.Greenlet] = []
    if args.role in ("local", "worker"):

        def on_test_start(**_kw: Any) -> None:
            if not started:
                started.append(gevent.spawn(tickers))

        env.events.test_start.add_listener(on_test_start)

    if args.role == "master":
        end = time.monotonic() + 30.0
        while len(runner.clients.ready) < args.expect_workers and time.monotonic() < end:
            gevent.sleep(0.1)
        if len(runner.clients.ready) < args.expect_workers:
            rec.emit(
                ev="error",
                message=f"only {len(runner.clients.ready)} of {args.expect_workers} "
                "locust workers connected within 30 s",
            )
            runner.quit()
            return 2
        runner.start(plan["users"], spawn_rate=spawn_rate)
        rec.emit(ev="started")

        def stop_at_end() -> None:
            gevent.sleep(plan["duration_s"] + 0.5 + (SPAWN_WAIT_S if is_open else 0.0))
            quit_("duration")

        gevent.spawn(stop_at_end)
    elif args.role == "local":
        runner.start(plan["users"], spawn_rate=spawn_rate)
    runner.greenlet.join()
    if started:
        started[0].kill(block=False)
        # a partial last second (users stopping) would read as a drop in the plots: not reported
        # per second, but its requests are in the scenario totals
    if raw is not None:
        raw.close()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    extra: dict = {
        "cpu_s": round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3),
        "wall_s": round(time.monotonic() - rec.t0, 3) if rec.t0 else 0.0,
    }
    if pacer is not None:
        extra["open"] = {
            "arrival": arrival,
            "scheduled": arrivals.counts(
                _spans(phases), arrival, plan.get("seed", 1) + os.getpid(), share["v"]
            ),
            "handed": pacer.handed,
            "dropped": pacer.dropped,
            "lag": hist.encode(pacer.lag),
            "max_inflight": runner.user_count or plan["users"],
        }
    if args.role != "master":
        rec.final(stopped["why"], extra)
    else:
        rec.emit(ev="final", stopped=stopped["why"], scenarios={})
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written: leave now. Interpreter shutdown can hang on client threads that
    # gevent does not own (grpcio's channel threads under grpc.experimental.gevent).
    os._exit(code)
