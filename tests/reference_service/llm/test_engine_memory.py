"""The engine's resident memory as the gateway exports it (supervisor.rss_bytes), without a server."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

from reference_service.llm.supervisor import rss_bytes


def test_rss_is_the_kernels_vmrss_in_bytes_and_nan_once_the_process_is_gone() -> None:
    # a child that holds 64 MiB it has written (so the pages are resident), then waits for stdin
    code = "import sys; b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    try:
        for _ in range(200):  # until the allocation is resident (the interpreter alone is ~10 MB)
            got = rss_bytes(child.pid)
            if got > 64 << 20:
                break
            time.sleep(0.05)
        status = Path(f"/proc/{child.pid}/status").read_text().splitlines()
        kb = next(int(x.split()[1]) for x in status if x.startswith("VmRSS:"))
        assert got > 64 << 20
        assert abs(got - kb * 1024) <= 0.05 * kb * 1024
    finally:
        child.communicate(b"")
    assert math.isnan(rss_bytes(child.pid))
