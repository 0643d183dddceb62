"""Run a gateway app under uvicorn on 127.0.0.1 until SIGTERM or Ctrl-C, then clean up.

Both services' ``serve`` commands end here: the same server options, the ``ready:`` line once the
gateway reports ready (or exit 1 after the ready timeout, with the server's log), the run folder
removed however the process stops.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI


def run_gateway(
    app: FastAPI,
    host: str,
    port: int,
    run_dir: Path,
    ready_timeout_s: float,
    ready_line: Callable[[], str],
    not_ready_log: Callable[[], str],
    poll_s: float,
    http: Any = "auto",
) -> int:
    """Serve ``app`` until stopped; 0 once it served, 1 when it never got ready.

    ``ready_line``: what follows ``ready:`` (`` in N s`` is added); ``not_ready_log``: what to
    print when not ready in time (the server's log); ``poll_s``: how often readiness is read;
    ``http``: uvicorn's HTTP protocol (a class, or "auto").
    """
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
            lifespan="on",
            http=http,
            server_header=False,  # no banner names the server
        )
    )
    started = time.monotonic()
    timed_out = False

    async def announce() -> None:
        nonlocal timed_out
        while not server.started and not server.should_exit:
            await asyncio.sleep(0.05)
        gw = app.state.gateway
        while not gw.ready:
            if time.monotonic() - started > ready_timeout_s:
                print(
                    f"not ready after {ready_timeout_s:.0f} s; {not_ready_log()}", file=sys.stderr, flush=True
                )
                timed_out = True
                server.should_exit = True
                return
            await asyncio.sleep(poll_s)
        print(f"ready: {ready_line()} in {time.monotonic() - started:.1f} s", flush=True)

    async def run() -> None:
        task = asyncio.create_task(announce())
        try:
            await server.serve()
        finally:
            task.cancel()

    # uvicorn re-raises a captured SIGTERM/SIGINT after shutdown; with the default handlers that
    # would kill the process before the run folder is removed. Ignore the re-raise.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        asyncio.run(run())
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    # uvicorn started but the gateway never got ready: that is the timeout's exit 1 too
    return 1 if timed_out or not server.started else 0
