"""Starts llama-server as a child process group, restarts it when it dies, stops it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from .engine import command
from .settings import LlmSettings

LOG = logging.getLogger("reference_service.llm.supervisor")


def rss_bytes(pid: int) -> float:
    """VmRSS of a process in bytes (the kernel reports kB), NaN when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("nan")


class EngineSupervisor:
    """Owns the engine process: start, watch, restart with backoff (1 s doubling to 10 s), stop."""

    def __init__(
        self,
        settings: LlmSettings,
        run_dir: Path,
        binary: Path,
        model: Path,
        make_command: Callable[[LlmSettings, Path, Path], list[str]] = command,
        name: str = "engine",
    ) -> None:
        self.s, self.run_dir, self.binary, self.model = settings, run_dir, binary, model
        self.make_command, self.name = make_command, name
        self.proc: subprocess.Popen | None = None
        self.metrics = None  # set by the gateway
        self.restarts = 0
        self._served = False
        self._launched_at = 0.0
        self._stopping = False
        self._task: asyncio.Task | None = None
        self._log = None

    def _launch(self) -> None:
        if self._log is not None:
            self._log.close()
        self._log = open(self.run_dir / f"{self.name}.log", "ab")  # noqa: SIM115 - the child writes it
        self._launched_at = time.monotonic()
        self._served = False
        env = dict(os.environ)
        env.pop("LLAMA_ARG_HOST", None)  # the command line is the whole configuration
        self.proc = subprocess.Popen(
            self.make_command(self.s, self.binary, self.model),
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        LOG.warning("llama-server (%s) started (pid %d)", self.name, self.proc.pid)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = (self.run_dir / f"{self.name}.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def rss_bytes(self) -> float:
        """The engine process's resident memory (VmRSS in /proc/<pid>/status); NaN when not running.

        Exported by the gateway as llm_engine_resident_memory_bytes: the series of the spec's
        memory-growth golden signal (AK616; seed 000 §5.4's slow leak shows in its slope).
        """
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return float("nan")
        return rss_bytes(proc.pid)

    def mark_ready(self) -> None:
        """Called by the gateway when the engine first answers /health ok after a (re)start."""
        self._served = True
        if self._launched_at and self.metrics is not None:
            self.metrics.cold_start.set(time.monotonic() - self._launched_at)
            self._launched_at = 0.0

    async def start(self) -> None:
        self._launch()
        self._task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        backoff = 1.0
        while not self._stopping:
            await asyncio.sleep(0.5)
            if self.proc is None or self.proc.poll() is None:
                continue
            crashed = self._served
            if crashed:
                backoff = 1.0
            LOG.warning(
                "llama-server (%s) %s with %s; restarting in %.0f s; last log lines:\n%s",
                self.name,
                "exited" if crashed else "failed to start",
                self.proc.returncode,
                backoff,
                self.log_tail(),
            )
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await asyncio.sleep(backoff)
            if self._stopping:
                return
            self.restarts += 1
            if crashed and self.metrics is not None:
                self.metrics.engine_restarts.inc()
            self._launch()
            backoff = min(backoff * 2, 10.0)

    async def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM the engine (it finishes cleanly), SIGKILL its group after a timeout."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            while proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
