"""Stopping a child process: SIGTERM, a grace period, then SIGKILL — and always reaped."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, timeout: float = 10) -> None:
    """Terminate `proc` if it still runs, kill it after `timeout` seconds, and wait for it."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
