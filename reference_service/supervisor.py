"""Starts the Triton worker as a child process group and restarts it when it dies (common.supervisor)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import sysconfig
from pathlib import Path

from .common.supervisor import ProcessSupervisor, descendants
from .settings import Settings

LOG = logging.getLogger("reference_service.supervisor")


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


class TritonSupervisor(ProcessSupervisor):
    """Owns the Triton worker process: start, watch, restart with backoff, stop.

    Beyond the common supervisor: PyTriton stops cleanly on SIGINT (6 s), and a killed worker
    leaves Triton's python-backend model copies in /tmp and shared-memory regions in /dev/shm.
    """

    what = "triton worker"
    log = LOG
    stop_signal = signal.SIGINT  # PyTriton's own clean stop
    stop_timeout_s = 6.0
    stop_poll_s = 0.1

    def __init__(self, settings: Settings, run_dir: Path, threads: int = 1) -> None:
        super().__init__(run_dir, "triton.log")
        self.s = settings
        self.threads = threads
        self._stub_dirs: set[str] = set()

    def _command(self) -> list[str]:
        ws = self.run_dir / f"workspace-{self.restarts}"
        return [
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

    def _env(self) -> dict[str, str]:
        (self.run_dir / "tmp").mkdir(exist_ok=True)
        repo_root = Path(__file__).resolve().parent.parent
        env = worker_env(self.run_dir)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(repo_root), env.get("PYTHONPATH", "")] if p)
        return env

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

    def _on_ready(self) -> None:
        self._note_stub_dirs()

    def _while_starting(self) -> None:
        # a start that fails leaves its models' /tmp/folder copies too: note them while its
        # stubs run, not only once it is ready
        self._note_stub_dirs()

    def _count_exit(self, crashed: bool) -> None:
        # Only a crash counts as a restart (ocr_triton_restarts_total, which the runbook's
        # triton-restarting check reads). A start can fail with the service never down:
        # PyTriton's multi-instance start can lose a race on a loaded machine (a second instance
        # connects to the first's handshake socket between its bind and listen: ECONNREFUSED).
        # triton_worker ships a retry for that race; the restart stays the fallback for any
        # other failed start.
        counter = self.metrics.triton_restarts if crashed else self.metrics.triton_start_failures
        counter.inc()

    def _kill_leftovers(self, pgid: int) -> None:
        super()._kill_leftovers(pgid)
        # A SIGKILLed python backend leaves its shared-memory regions (named after the
        # PyTriton process id) behind.
        self._remove_stub_dirs()
        for name in os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []:
            if name.startswith(f"pytrtion{pgid}-"):
                with contextlib.suppress(OSError):
                    os.unlink(f"/dev/shm/{name}")
