"""Starts llama-server as a child process group, restarts it when it dies, stops it (common.supervisor)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from ..common.supervisor import ProcessSupervisor
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


class EngineSupervisor(ProcessSupervisor):
    """Owns the engine process: start, watch, restart with backoff (1 s doubling to 10 s), stop.

    llama-server finishes cleanly on SIGTERM (5 s, then SIGKILL) and leaves nothing else behind.
    """

    log = LOG

    def __init__(
        self,
        settings: LlmSettings,
        run_dir: Path,
        binary: Path,
        model: Path,
        make_command: Callable[[LlmSettings, Path, Path], list[str]] = command,
        name: str = "engine",
    ) -> None:
        super().__init__(run_dir, f"{name}.log")
        self.s, self.binary, self.model = settings, binary, model
        self.make_command, self.name = make_command, name
        self.what = f"llama-server ({name})"

    def _command(self) -> list[str]:
        return self.make_command(self.s, self.binary, self.model)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("LLAMA_ARG_HOST", None)  # the command line is the whole configuration
        return env

    def rss_bytes(self) -> float:
        """The engine process's resident memory (VmRSS in /proc/<pid>/status); NaN when not running.

        Exported by the gateway as llm_engine_resident_memory_bytes: the series of the spec's
        memory-growth golden signal (AK616; seed 000 §5.4's slow leak shows in its slope).
        """
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return float("nan")
        return rss_bytes(proc.pid)

    def _count_exit(self, crashed: bool) -> None:
        # a failed start has no counter of its own here: the spec's restart alert reads crashes
        if crashed:
            self.metrics.engine_restarts.inc()
