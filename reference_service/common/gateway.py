"""What both gateways answer the same way: the error shape, the fixed routes, the readiness loop.

Each service adds its own ``/readyz`` body, ``/v1/models`` and inference routes to the app that
``gateway_app`` returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException


def error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The one error shape: {"error": {"code", "message"}} (no tracebacks, no paths)."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


def retry_after(seconds: int | None) -> dict[str, str] | None:
    """The Retry-After header of a 429 or 503 (none when ``seconds`` is None)."""
    return {"Retry-After": str(seconds)} if seconds is not None else None


def gateway_app(
    title: str, gw: Any, registry: CollectorRegistry, log: logging.Logger, *, allow_header: bool = True
) -> FastAPI:
    """A FastAPI app that starts and stops ``gw`` with itself and answers the fixed routes.

    No docs or OpenAPI pages; 404, 405 and any unhandled error in the one error shape;
    ``/healthz`` (the process answers) and ``/metrics`` (``registry`` in Prometheus' text format).
    ``allow_header``: a 405 carries Starlette's ``Allow`` header (RFC 9110 §15.5.6).
    """

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await gw.start()
        try:
            yield
        finally:
            await gw.stop()

    app = FastAPI(title=title, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.gateway = gw

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException):  # 404, 405: the one shape
        codes = {404: "not_found", 405: "method_not_allowed"}
        headers = exc.headers if allow_header else None
        return error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail), headers)

    @app.exception_handler(Exception)
    async def _unhandled(_request: Request, exc: Exception):  # never leak a traceback or a path
        log.exception("unhandled error")
        return error(500, "internal_error", "internal error")

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics():
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return app


async def watch_readiness(
    probe: Callable[[], Awaitable[bool]],
    is_ready: Callable[[], bool],
    became_ready: Callable[[], None],
    set_ready: Callable[[bool], None],
) -> None:
    """Probe the inference server for ever: every 0.5 s while it answers, every 0.25 s while not.

    ``became_ready`` runs on the first good probe after not ready (the supervisor's cold start).
    A busy server can miss one probe; two misses in a row (~0.5 s) mean not ready.
    """
    failures = 0
    while True:
        ok = await probe()
        if ok and not is_ready():
            became_ready()
        failures = 0 if ok else failures + 1
        if ok or failures >= 2:
            set_ready(ok)
        await asyncio.sleep(0.5 if ok else 0.25)


OVERLOADED = "too many requests in flight; retry later"  # the 429's message when admission is full


class Admission:
    """At most ``limit`` requests in flight; beyond it the gateway answers 429 with Retry-After at
    once (a bounded queue, seed 000 §3.2: the server would only defer them). ``gauge`` follows the
    count (each service's in-flight gauge)."""

    def __init__(self, limit: int, gauge: Any) -> None:
        self.limit, self.gauge, self.inflight = limit, gauge, 0

    @property
    def full(self) -> bool:
        return self.inflight >= self.limit

    def enter(self) -> None:
        self.inflight += 1
        self.gauge.set(self.inflight)

    def leave(self) -> None:
        self.inflight -= 1
        self.gauge.set(self.inflight)
