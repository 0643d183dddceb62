"""What a measurement ran on: recorded beside every calibration and load-test report."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows, else '?'."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages, rounded; None where the platform has none."""
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None
