"""An inference server as a child process group: start, watch, restart with backoff, stop.

The Triton worker (OCR) and llama-server (LLM) are supervised the same way; a subclass says what
to launch (``_command``, ``_env``), what a dead server leaves behind (``_kill_leftovers``) and
which counter an exit moves (``_count_exit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any


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


class ProcessSupervisor:
    """Owns one server process group: start, watch, restart (1 s doubling to 10 s), stop.

    A server that dies before it ever served failed to start; one that dies after it served
    crashed. Failed starts back off 1, 2, 4 ... 10 s; a crash starts again from 1 s (a crash a day
    after the last one must not wait 10 s). ``metrics`` is set by the gateway; its ``cold_start``
    gauge gets the seconds from launch to ready.
    """

    what = "server"  # names the process in log lines
    log: logging.Logger = logging.getLogger("reference_service.common.supervisor")
    stop_signal = signal.SIGTERM  # the server's own clean stop
    stop_timeout_s = 5.0  # then SIGKILL
    stop_poll_s = 0.05

    def __init__(self, run_dir: Path, log_name: str) -> None:
        self.run_dir, self.log_name = run_dir, log_name
        self.proc: subprocess.Popen | None = None
        self.metrics: Any = None  # set by the gateway
        self.restarts = 0  # launches after the first, crashes and failed starts alike
        self._served = False  # the current process has been ready at least once
        self._launched_at = 0.0
        self._stopping = False
        self._task: asyncio.Task | None = None
        self._log: IO[bytes] | None = None

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _env(self) -> dict[str, str]:
        return dict(os.environ)

    def _launch(self) -> None:
        if self._log is not None:
            self._log.close()
        self._log = open(self.run_dir / self.log_name, "ab")  # noqa: SIM115 - the child writes it
        cmd, env = self._command(), self._env()
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
        self.log.warning("%s started (pid %d)", self.what, self.proc.pid)

    def log_tail(self, lines: int = 15) -> str:
        """The end of the server's log (it lives in the run folder, removed at exit)."""
        try:
            text = (self.run_dir / self.log_name).read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def mark_ready(self) -> None:
        """Called by the gateway when the server first reports ready after a (re)start."""
        self._served = True
        self._on_ready()
        if self._launched_at and self.metrics is not None:
            self.metrics.cold_start.set(time.monotonic() - self._launched_at)
            self.log.warning("%s ready after %.1f s", self.what, time.monotonic() - self._launched_at)
            self._launched_at = 0.0

    def _on_ready(self) -> None:
        """What a subclass notes once the server is ready."""

    def _while_starting(self) -> None:
        """What a subclass notes while a start is under way (every 0.5 s until ready)."""

    def _count_exit(self, crashed: bool) -> None:
        """Move the metric a crash (or a failed start) counts in."""

    def _kill_leftovers(self, pgid: int) -> None:
        """SIGKILL the server's process group (a subclass removes what else it leaves)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)

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
                    self._while_starting()
                continue
            crashed = self._served
            if crashed:
                backoff = 1.0  # a new failure, not the next step of a start loop
            self.log.warning(
                "%s %s with %s; restarting in %.0f s; last log lines:\n%s",
                self.what,
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
                self._count_exit(crashed)
            self._launch()
            backoff = min(backoff * 2, 10.0)

    async def stop(self, timeout_s: float | None = None) -> None:
        """``stop_signal`` to the server, SIGKILL to its group and descendants after a timeout."""
        timeout_s = self.stop_timeout_s if timeout_s is None else timeout_s
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(self.stop_signal)
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(self.stop_poll_s)
            if proc.poll() is None:
                self.log.warning("%s did not stop in %.0f s; killing", self.what, timeout_s)
        if proc is not None:
            # descendants that left the group (a new session) are killed one by one
            leftovers = descendants(proc.pid)
            self._kill_leftovers(proc.pid)
            for pid in leftovers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
