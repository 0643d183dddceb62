"""Chaos faults on local processes: stop, kill, restart, pause and delay, then their effect measured.

How a spec service maps to something local (docs/loadtest.md, "Chaos"):
- `--service NAME=PID`, `--service NAME=@PIDFILE` or `--service NAME=~TEXT` (the one process
  tree of this user whose command line contains TEXT) names the process that runs topology
  service NAME. A pid file or text is resolved again after each fault, so a supervisor that
  restarts the process under a new pid is followed.
- stop = SIGTERM, kill = SIGKILL (a supervisor is expected to restart it; the fault measures how
  long that takes as seen by clients), restart = SIGTERM and wait for a new pid in the pid file,
  pause = SIGSTOP of the process and its descendants for `duration_s`, then SIGCONT.
- delay: a TCP proxy archkit runs on 127.0.0.1 adds `delay_ms` to every chunk for `duration_s`.
  When the fault targets the load test's own target service the proxy is put in front of it
  automatically; for an inner service pass `--proxy NAME=LISTEN_PORT:UPSTREAM_PORT` and point the
  caller at LISTEN_PORT.
Seed 000 §4.4: "kill pods at random, inject network delay, check the degrade paths really work".
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from archkit.errors import InputError
from archkit.spec.model import Fault, Spec, Terminal


class ChaosError(InputError, ValueError):
    """A fault cannot be applied with what the command line provided."""


def descendants(pid: int) -> list[int]:
    """Live descendants of pid, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(0), [])
        out += kids
        todo += kids
    return out


@dataclass
class ProcessRef:
    """A local process standing for a spec service: a fixed pid or a pid file."""

    name: str
    pid: int | None = None
    pidfile: Path | None = None
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> ProcessRef:
        name, sep, ref = text.partition("=")
        if not sep or not name or not ref:
            raise ChaosError(f"--service expects NAME=PID, NAME=@PIDFILE or NAME=~CMDLINE-TEXT, got {text!r}")
        if ref.startswith("@"):
            return cls(name, pidfile=Path(ref[1:]))
        if ref.startswith("~"):
            return cls(name, pattern=ref[1:])
        if not ref.isdigit():
            raise ChaosError(f"--service {name}: {ref!r} is neither a pid, @pidfile nor ~cmdline-text")
        return cls(name, pid=int(ref))

    def current(self) -> int:
        if self.pattern is not None:
            return self._match()
        if self.pidfile is not None:
            try:
                return int(self.pidfile.read_text().strip())
            except (OSError, ValueError) as exc:
                raise ChaosError(f"service {self.name}: cannot read pid file {self.pidfile}: {exc}") from None
        return int(self.pid)

    def _match(self) -> int:
        """The topmost process of this user whose command line contains the pattern."""
        me = os.getpid()
        found: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                cmd = (
                    Path(f"/proc/{entry}/cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode("utf-8", "replace")
                )
                if os.stat(f"/proc/{entry}").st_uid != os.getuid():
                    continue
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if self.pattern in cmd:
                found[int(entry)] = ppid
        top = sorted(pid for pid, ppid in found.items() if ppid not in found)
        if not top:
            raise ChaosError(f"service {self.name}: no process of this user matches {self.pattern!r}")
        if len(top) > 1:
            raise ChaosError(
                f"service {self.name}: {len(top)} processes match {self.pattern!r} "
                f"(pids {', '.join(map(str, top[:5]))}); make the text more specific"
            )
        return top[0]


class DelayProxy:
    """A TCP proxy on 127.0.0.1 that can hold every chunk back by `delay_ms` while a fault lasts."""

    def __init__(self, upstream_port: int, listen_port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.delay_s = 0.0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", listen_port))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.delay_s:
                    time.sleep(self.delay_s)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()


@dataclass
class FaultRecord:
    """What happened to one fault: when it was applied, and whether it could be."""

    index: int
    fault: Fault
    applied: bool = False
    error: str | None = None
    started_s: float | None = None
    ended_s: float | None = None
    pid_before: int | None = None
    pid_after: int | None = None
    notes: list[str] = field(default_factory=list)


class Injector:
    """Applies a level's faults at their times, relative to the start of the load."""

    def __init__(self, faults: list[Fault], services: dict[str, ProcessRef], proxies: dict[str, DelayProxy]):
        self.faults = faults
        self.services = services
        self.proxies = proxies
        self.records = [FaultRecord(i, f) for i, f in enumerate(faults)]
        self.t0 = 0.0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def preflight(self) -> None:
        """Refuse before the run when a fault has nothing to act on."""
        for f in self.faults:
            if f.action in ("loss", "stress"):
                raise ChaosError(
                    f"{f.action} fault on {f.target}: the local runner cannot inject it; apply render's "
                    "chaos-mesh/ experiment in a cluster"
                )
            if f.action == "delay":
                if f.target not in self.proxies:
                    raise ChaosError(
                        f"delay fault on {f.target}: no proxy for it (it is not the load test's "
                        f"target service; pass --proxy {f.target}=LISTEN_PORT:UPSTREAM_PORT)"
                    )
            elif f.target not in self.services:
                raise ChaosError(
                    f"{f.action} fault on service {f.target}: say which local process runs it "
                    f"with --service {f.target}=PID or --service {f.target}=@PIDFILE"
                )
            else:
                pid = self.services[f.target].current()
                if not Path(f"/proc/{pid}").exists():
                    raise ChaosError(f"service {f.target}: process {pid} is not running")

    def start(self, t0_monotonic: float) -> None:
        self.t0 = t0_monotonic
        for rec in self.records:
            th = threading.Thread(target=self._apply, args=(rec,), daemon=True)
            th.start()
            self._threads.append(th)

    def _sleep_until(self, t: float) -> bool:
        return not self._stop.wait(max(0.0, self.t0 + t - time.monotonic()))

    def _now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def _apply(self, rec: FaultRecord) -> None:
        f = rec.fault
        if not self._sleep_until(f.at_s):
            return
        try:
            if f.action == "delay":
                proxy = self.proxies[f.target]
                proxy.delay_s = (f.delay_ms or 0.0) / 1000.0
                rec.applied, rec.started_s = True, self._now()
                self._stop.wait(f.duration_s if f.duration_s is not None else 5.0)
                proxy.delay_s = 0.0
                rec.ended_s = self._now()
                return
            ref = self.services[f.target]
            pid = ref.current()
            rec.pid_before = pid
            if f.action == "pause":
                group = [pid] + descendants(pid)
                for p in group:
                    os.kill(p, signal.SIGSTOP)
                rec.applied, rec.started_s = True, self._now()
                self._stop.wait(f.duration_s if f.duration_s is not None else 5.0)
                for p in group:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGCONT)
                rec.ended_s = self._now()
            else:
                sig = signal.SIGKILL if f.action == "kill" else signal.SIGTERM
                os.kill(pid, sig)
                rec.applied, rec.started_s = True, self._now()
                rec.ended_s = rec.started_s
                if ref.pidfile is not None or ref.pattern is not None:
                    # follow a supervisor's restart: wait (bounded) for a new live pid
                    end = time.monotonic() + (f.duration_s or 30.0)
                    while time.monotonic() < end and not self._stop.is_set():
                        try:
                            new = ref.current()
                        except ChaosError:
                            new = None
                        if new and new != pid and Path(f"/proc/{new}").exists():
                            rec.pid_after = new
                            rec.notes.append(
                                f"restarted as pid {new} after {self._now() - rec.started_s:.2f} s"
                            )
                            break
                        time.sleep(0.1)
        except (OSError, ChaosError) as exc:
            rec.error = str(exc)

    def stop(self) -> None:
        """Undo whatever is still applied (a paused process is always continued)."""
        self._stop.set()
        for th in self._threads:
            th.join(timeout=5)
        for p in self.proxies.values():
            p.delay_s = 0.0


def fallback_status(spec: Spec, node_id: str | None) -> int | None:
    """The protocol status by which a client recognises that a fallback answered."""
    if not node_id:
        return None
    node = spec.control_node(node_id)
    if isinstance(node, Terminal):
        return node.status
    return None


def analyse(records: list[FaultRecord], seconds: list[dict], spec: Spec, duration_s: float) -> list[dict]:
    """Error burst, recovery time and fallback answers of each fault, from the per-second samples.

    A second is healthy when its error rate is within the error budget (1% if none) and its P99
    within the P99 budget (if any); recovery is the first of two healthy seconds in a row after the
    fault ended (seconds in which no request completed are skipped), measured from the fault's end.
    """
    err_budget = spec.budgets.error_rate if spec.budgets.error_rate is not None else 0.01
    p99_budget = spec.budgets.p99_ms

    def healthy(row: dict) -> bool:
        if not row["requests"]:
            return False
        if row["errors"] / row["requests"] > err_budget:
            return False
        return p99_budget is None or (row["p99_ms"] or 0) <= p99_budget

    out = []
    for rec in records:
        f = rec.fault
        status = fallback_status(spec, f.expect_fallback)
        item = {
            "index": rec.index,
            "action": f.action,
            "target": f.target,
            "at_s": f.at_s,
            "duration_s": f.duration_s,
            "delay_ms": f.delay_ms,
            "expect_fallback": f.expect_fallback,
            "fallback_status": status,
            "applied": rec.applied,
            "error": rec.error,
            "started_s": rec.started_s,
            "ended_s": rec.ended_s,
            "notes": rec.notes,
            "spec_path": list(f.spec_path),
        }
        if rec.applied and rec.started_s is not None:
            start, end = rec.started_s, rec.ended_s if rec.ended_s is not None else rec.started_s
            # second row t covers (t-1, t]
            # seconds in which nothing completed say nothing about health (slow requests): skipped
            after = [r for r in seconds if r["t"] > end and r["requests"]]
            rec_t = None
            for a, b in zip(after, after[1:] + [None], strict=False):
                if healthy(a) and (b is None or healthy(b)):
                    rec_t = a["t"] - 1
                    break
            item["recovery_s"] = round(max(0.0, rec_t - end), 3) if rec_t is not None else None
            window_end = rec_t + 1 if rec_t is not None else duration_s + 1
            window = [r for r in seconds if start < r["t"] <= window_end]
            errs = sum(r["errors"] for r in window)
            item["burst_errors"] = errs
            item["burst_requests"] = sum(r["requests"] for r in window)
            bad = [r for r in window if r["requests"] and r["errors"] / r["requests"] > err_budget]
            item["burst_seconds"] = len(bad)
            item["peak_error_rate"] = round(
                max((r["errors"] / r["requests"] for r in window if r["requests"]), default=0.0), 4
            )
            item["worst_p99_ms"] = max((r["p99_ms"] or 0 for r in window), default=None)
            if status is not None:
                item["fallback_answers"] = sum(r["statuses"].get(str(status), 0) for r in window)
        out.append(item)
    return out
