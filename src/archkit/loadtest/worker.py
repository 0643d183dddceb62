"""The load-generator process: runs a generated locustfile with locust as a library and streams results.

Run as `python -m archkit.loadtest.worker --plan PLAN.json --role local|master|worker`.
gevent patches the interpreter here, first, before anything imports `ssl` (design principle D4, docs/sources.md), which is
why this is its own process. Every request's latency goes, unrounded, into HDR histograms
(locust's own stats round to buckets); the process writes JSON lines on stdout:

- `{"ev": "started"}` when users start;
- `{"ev": "tick", "s": second, "n", "err", "st": {status: n}, "h": hdr, "users", "rate"}` each second;
- `{"ev": "phase", "i", "rate", "n", "err", "st", "h", "he"}` at the end of each offered-rate phase
  (`h` every request, `he` the failed ones);
- `{"ev": "final", "scenarios": {id: {"n", "err", "st", "h", "he", "msgs"}}, "stopped": why}`.

With ARCHKIT_RAW_LATENCIES=PATH set, every latency is also written to PATH.<pid> (for tests
that check the histograms against the raw list).

SIGTERM stops the test early (the parent does it when a stress step broke its budget). The
process always stops by itself at the plan's deadline and after max_requests requests.
"""

from gevent import monkey  # first: gevent must patch before anything imports ssl

monkey.patch_all()

import argparse
import importlib.util
import json
import os
import random
import signal
import sys
import time

import gevent
import locust  # before requests and friends (design principle D4)
from locust.env import Environment

from archkit.loadtest import hist

DRAIN_S = 15.0  # how long requests in flight at the end may take to finish


class Recorder:
    """Per-request hook: exact latencies per scenario, per second and per phase."""

    def __init__(self, out, raw=None) -> None:
        self.out = out
        self.raw = raw  # optional file: every latency, unrounded, one per line (for verification)
        self.multi_phase = True
        self.t0 = None
        self.total = 0
        self.scen: dict[str, dict] = {}
        self.sec = self._bucket()
        self.sec_index = 0
        self.phase = self._bucket()

    @staticmethod
    def _bucket() -> dict:
        return {"n": 0, "err": 0, "st": {}, "h": hist.new(), "he": hist.new()}

    def targets(self, sc: dict) -> tuple:
        # a single-phase run's phase histogram would equal the total: skip it (3 records -> 2 per request)
        return (sc, self.sec, self.phase) if self.multi_phase else (sc, self.sec)

    def emit(self, **event) -> None:
        self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        self.out.flush()

    def on_request(
        self,
        request_type,
        name,
        response_time,
        response_length,
        response=None,
        context=None,
        exception=None,
        **_kw,
    ) -> None:
        if self.t0 is None:
            return
        self.total += 1
        if self.raw is not None:
            self.raw.write(f"{name}\t{response_time!r}\t{int(exception is not None)}\n")
        status = getattr(response, "status_code", None)
        status = int(status) if isinstance(status, int) else 0
        sc = self.scen.get(name)
        if sc is None:
            sc = self.scen[name] = {**self._bucket(), "msgs": {}}
        for b in self.targets(sc):
            b["n"] += 1
            b["st"][status] = b["st"].get(status, 0) + 1
            hist.record_ms(b["h"], response_time)
            if exception is not None:
                b["err"] += 1
                hist.record_ms(b["he"], response_time)
        if exception is not None:
            msg = str(exception)[:200] or type(exception).__name__
            if len(sc["msgs"]) < 20 or msg in sc["msgs"]:
                sc["msgs"][msg] = sc["msgs"].get(msg, 0) + 1

    def flush_second(self, users: int, rate) -> None:
        b, self.sec = self.sec, self._bucket()
        self.emit(
            ev="tick",
            s=self.sec_index,
            n=b["n"],
            err=b["err"],
            st=b["st"],
            h=hist.encode(b["h"]),
            users=users,
            rate=rate,
        )
        self.sec_index += 1

    def flush_phase(self, i: int, rate) -> None:
        b, self.phase = self.phase, self._bucket()
        if not self.multi_phase:  # the one phase is everything recorded so far
            for sc in self.scen.values():
                b["n"] += sc["n"]
                b["err"] += sc["err"]
                for k, v in sc["st"].items():
                    b["st"][k] = b["st"].get(k, 0) + v
                b["h"].add(sc["h"])
                b["he"].add(sc["he"])
        self.emit(
            ev="phase",
            i=i,
            rate=rate,
            n=b["n"],
            err=b["err"],
            st=b["st"],
            h=hist.encode(b["h"]),
            he=hist.encode(b["he"]),
        )

    def final(self, stopped: str) -> None:
        self.emit(
            ev="final",
            stopped=stopped,
            scenarios={
                k: {
                    "n": v["n"],
                    "err": v["err"],
                    "st": v["st"],
                    "h": hist.encode(v["h"]),
                    "he": hist.encode(v["he"]),
                    "msgs": v["msgs"],
                }
                for k, v in sorted(self.scen.items())
            },
        )


def load_locustfile(path: str):
    spec = importlib.util.spec_from_file_location("archkit_locustfile", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["archkit_locustfile"] = mod
    spec.loader.exec_module(mod)
    return mod


def user_classes(mod) -> list:
    from locust import User

    return [
        v
        for v in vars(mod).values()
        if isinstance(v, type)
        and issubclass(v, User)
        and not getattr(v, "abstract", True)
        and v.__module__ == mod.__name__
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m archkit.loadtest.worker")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--role", choices=["local", "master", "worker"], default="local")
    ap.add_argument("--master-host", default="127.0.0.1")
    ap.add_argument("--master-port", type=int, default=5557)
    ap.add_argument("--expect-workers", type=int, default=1)
    args = ap.parse_args(argv)
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

    mod = load_locustfile(plan["locustfile"])
    classes = user_classes(mod)
    if not classes:
        rec.emit(ev="error", message=f"no runnable user class in {plan['locustfile']}")
        return 2
    # At the end no new request starts and the ones in flight may finish (up to DRAIN_S): cutting
    # them off would drop exactly the slowest requests and bias the percentiles low.
    env = Environment(user_classes=classes, events=locust.events, host=plan["host"], stop_timeout=DRAIN_S)
    phases = plan["phases"]
    steps = [(p["start_s"], p["rate_rps"] or 0) for p in phases] if len(phases) > 1 else []
    mod.PACER.configure(phases[0]["rate_rps"] or 0, plan["users"], steps)
    deadline = time.monotonic() + plan["duration_s"] + DRAIN_S + 10.0
    stopped = {"why": "duration"}

    if args.role == "master":
        runner = env.create_master_runner("127.0.0.1", args.master_port)
    elif args.role == "worker":
        runner = env.create_worker_runner(args.master_host, args.master_port)
    else:
        runner = env.create_local_runner()

    def quit_(why: str) -> None:
        if stopped["why"] == "duration":
            stopped["why"] = why
        mod.PACER.closed = True
        runner.quit()

    gevent.signal_handler(signal.SIGTERM, lambda: quit_("stopped by the runner"))
    gevent.signal_handler(signal.SIGINT, lambda: quit_("interrupted"))
    gevent.spawn_later(plan["duration_s"] + DRAIN_S + 10.0, quit_, "deadline")

    def rate_of_second(index: int):
        """The offered rate in the middle of second `index` (the one a tick reports on)."""
        mid = index + 0.5
        rate = None
        for p in phases:
            if p["start_s"] <= mid:
                rate = p["rate_rps"]
        return rate

    def on_request(**kw):
        rec.on_request(**kw)
        if rec.total >= plan["max_requests"] and not mod.PACER.closed:
            mod.PACER.closed = True  # the request bound (per process): nothing new is sent
            if stopped["why"] == "duration":
                stopped["why"] = "max_requests"
            if args.role == "local":
                gevent.spawn(quit_, "max_requests")

    def tickers():
        # Phases and seconds are timed from the start of the test on this process.
        t0 = time.monotonic()
        mod.PACER.t0 = t0
        rec.t0 = t0
        rec.emit(ev="started")
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
                    mod.PACER.closed = True  # the planned time is over: nothing new is sent
                    if args.role == "local":
                        quit_("duration")
                    return

    env.events.request.add_listener(on_request)
    started = []
    if args.role in ("local", "worker"):

        def on_test_start(**_kw):
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
        runner.start(plan["users"], spawn_rate=max(plan["users"], 1))
        rec.emit(ev="started")

        def stop_at_end():
            gevent.sleep(plan["duration_s"] + 0.5)
            quit_("duration")

        gevent.spawn(stop_at_end)
    elif args.role == "local":
        runner.start(plan["users"], spawn_rate=max(plan["users"], 1))
    runner.greenlet.join()
    if started:
        started[0].kill(block=False)
        # a partial last second (users stopping) would read as a drop in the plots: not reported
        # per second, but its requests are in the scenario totals
    if raw is not None:
        raw.close()
    if args.role != "master":
        rec.final(stopped["why"])
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
