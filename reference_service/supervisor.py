"""Starts the Triton worker as a child process group and restarts it when it dies."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from .settings import Settings

LOG = logging.getLogger("reference_service.supervisor")


def descendants(pid: int) -> list[int]:
    """All live descendants of ``pid``, read from /proc (children before grandchildren)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(0), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def worker_env(run_dir: Path) -> dict[str, str]:
    """Environment for the worker: private PYTRITON_HOME, this interpreter's libpython first."""
    env = dict(os.environ)
    env["PYTRITON_HOME"] = str(run_dir / "pytriton")
    # The python-backend stub may otherwise load the system libpython3.11 (issue 6).
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in [libdir, env.get("LD_LIBRARY_PATH", "")] if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    # onnxruntime keeps a ".ses" file in TMPDIR; keep it (and anything else) in the run folder.
    env["TMPDIR"] = str(run_dir / "tmp")
    return env


class TritonSupervisor:
    """Owns the Triton worker process: start, watch, restart with backoff, stop."""

    def __init__(self, settings: Settings, run_dir: Path, threads: int = 1) -> None:
        self.s = settings
        self.run_dir = run_dir
        self.threads = threads
        self.proc: subprocess.Popen | None = None
        self.metrics = None  # set by the gateway
        self.restarts = 0  # launches after the first, crashes and failed starts alike
        self._served = False  # the current worker has reported ready at least once
        self._launched_at = 0.0
        self._stopping = False
        self._task: asyncio.Task | None = None
        self._log = None
        self._stub_dirs: set[str] = set()

    def _launch(self) -> None:
        ws = self.run_dir / f"workspace-{self.restarts}"
        cmd = [
            sys.executable,
            "-m",
            "reference_service.triton_worker",
            "--host",
            self.s.host,
            "--http-port",
            str(self.s.triton_http_port),
            "--grpc-port",
            str(self.s.triton_grpc_port),
            "--metrics-port",
            str(self.s.triton_metrics_port),
            "--workspace",
            str(ws),
            "--profile",
            self.s.profile,
            "--det-instances",
            str(self.s.detector.instances),
            "--rec-instances",
            str(self.s.recogniser.instances),
            "--threads",
            str(self.threads),
        ]
        self._log = open(self.run_dir / "triton.log", "ab")  # noqa: SIM115 - the child writes it
        (self.run_dir / "tmp").mkdir(exist_ok=True)
        repo_root = Path(__file__).resolve().parent.parent
        env = worker_env(self.run_dir)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(repo_root), env.get("PYTHONPATH", "")] if p)
        self._launched_at = time.monotonic()
        self._served = False
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        LOG.warning("triton worker started (pid %d)", self.proc.pid)

    def log_tail(self, lines: int = 15) -> str:
        """The end of the worker's log (it lives in the run folder, removed at exit)."""
        try:
            text = (self.run_dir / "triton.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _note_stub_dirs(self) -> None:
        # Triton's python backend copies each model to a hard-coded /tmp/folderXXXXXX and
        # removes it only on a clean stop; remember them to remove them after a crash.
        if self.proc is None:
            return
        for pid in descendants(self.proc.pid):
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            for a in args:
                text = a.decode(errors="replace")
                if text.startswith("/tmp/folder") and text.endswith("/model.py"):
                    self._stub_dirs.add(text.split("/")[2])

    def _remove_stub_dirs(self) -> None:
        for name in self._stub_dirs:
            shutil.rmtree(f"/tmp/{name}", ignore_errors=True)
        self._stub_dirs.clear()

    def mark_ready(self) -> None:
        """Called by the gateway when both models first report ready after a (re)start."""
        self._served = True
        self._note_stub_dirs()
        if self._launched_at and self.metrics is not None:
            self.metrics.cold_start.set(time.monotonic() - self._launched_at)
            LOG.warning("triton ready after %.1f s", time.monotonic() - self._launched_at)
            self._launched_at = 0.0

    async def start(self) -> None:
        self._launch()
        self._task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        backoff = 1.0
        while not self._stopping:
            await asyncio.sleep(0.5)
            if self.proc is None:
                continue
            if self.proc.poll() is None:
                if not self._served:
                    # a start that fails leaves its models' /tmp/folder copies too: note them
                    # while its stubs run, not only once it is ready
                    self._note_stub_dirs()
                continue
            # A worker that dies before it ever served failed to start; one that dies after
            # crashed. Only a crash counts as a restart (ocr_triton_restarts_total, which the
            # runbook's triton-restarting check reads). A start can fail with the service never
            # down: PyTriton's multi-instance start can lose a race on a loaded machine (a
            # second instance connects to the first's handshake socket between its bind and
            # listen: ECONNREFUSED). triton_worker ships a retry for that race; this restart
            # stays the fallback for any other failed start.
            crashed = self._served
            if crashed:
                # it had served: a new failure, not the next step of a start loop, so the
                # shortest wait (a crash a day after the last one must not wait 10 s)
                backoff = 1.0
            LOG.warning(
                "triton worker %s with %s; restarting in %.0f s; last log lines:\n%s",
                "exited" if crashed else "failed to start",
                self.proc.returncode,
                backoff,
                self.log_tail(),
            )
            self._kill_leftovers(self.proc.pid)
            await asyncio.sleep(backoff)
            if self._stopping:
                return
            self.restarts += 1
            if self.metrics is not None:
                counter = self.metrics.triton_restarts if crashed else self.metrics.triton_start_failures
                counter.inc()
            self._launch()
            backoff = min(backoff * 2, 10.0)

    def _kill_leftovers(self, pgid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        # A SIGKILLed python backend leaves its shared-memory regions (named after the
        # PyTriton process id) behind.
        self._remove_stub_dirs()
        for name in os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []:
            if name.startswith(f"pytrtion{pgid}-"):
                with contextlib.suppress(OSError):
                    os.unlink(f"/dev/shm/{name}")

    async def stop(self, timeout_s: float = 6.0) -> None:
        """SIGINT the worker (PyTriton's own clean stop), SIGKILL its group after a timeout."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if proc.poll() is None:
                LOG.warning("triton worker did not stop in %.0f s; killing", timeout_s)
        if proc is not None:
            leftovers = descendants(proc.pid)
            self._kill_leftovers(proc.pid)
            for pid in leftovers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
