"""The shared supervisor's stop (reference_service.common.supervisor) leaves no process behind.

Both services stop their server through it: the server's own clean stop first, SIGKILL to its group
after the timeout (a child in the group dies with it even when the server itself has exited), and
the descendants of a server still running then are killed one by one, also one that left the group
for a session of its own. The servers here are real python processes standing in for Triton and
llama-server (neither is needed to exercise the stop); no timing is asserted.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT))

from reference_service.common.supervisor import ProcessSupervisor  # noqa: E402

# "exit": dies on SIGTERM, its child stays in its process group; "ignore": ignores SIGTERM, its
# child has left the group (a session of its own)
SERVER = """
import signal, subprocess, sys, time
ignore = sys.argv[1] == "ignore"
if ignore:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=ignore)
print(child.pid, flush=True)
time.sleep(120)
"""


class Scripted(ProcessSupervisor):
    what = "scripted server"

    def __init__(self, run_dir: Path, on_sigterm: str) -> None:
        super().__init__(run_dir, "server.log")
        self.on_sigterm = on_sigterm

    def _command(self) -> list[str]:
        return [sys.executable, "-c", SERVER, self.on_sigterm]


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody has reaped yet (it runs nothing any more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize(
    ("on_sigterm", "returncode"), [("exit", -signal.SIGTERM), ("ignore", -signal.SIGKILL)]
)
def test_stop_ends_the_server_and_its_child(tmp_path, on_sigterm, returncode) -> None:
    sup = Scripted(tmp_path, on_sigterm)

    async def run() -> int:
        await sup.start()
        log = tmp_path / "server.log"
        deadline = time.monotonic() + 60  # a busy machine starts python slowly
        while not log.read_text().strip():
            assert time.monotonic() < deadline, "the server never wrote its child's pid"
            await asyncio.sleep(0.05)
        await sup.stop(timeout_s=1.0)
        return int(log.read_text().split()[0])

    child = asyncio.run(run())
    assert sup.proc is not None and sup.proc.returncode == returncode
    deadline = time.monotonic() + 10
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), f"the child {child} outlived the stop"
    assert sup.restarts == 0
