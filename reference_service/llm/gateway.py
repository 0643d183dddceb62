"""The LLM gateway: caps, admission, deadlines and golden signals in front of llama-server.

``POST /v1/chat/completions`` and ``POST /v1/completions`` take OpenAI-style JSON; with
``"stream": true`` the engine's server-sent events are relayed as they come. The gateway
refuses what the engine should never see (bodies, prompts and output lengths over the caps:
413/422), admits at most ``max_inflight`` requests (429 with Retry-After beyond: the engine would
only defer them, seed 000 §3.2's bounded queue), answers 503 while the engine is not ready, maps
the engine's context overflow to 400 ``context_overflow``, and makes outputs deterministic:
greedy (temperature 0) and seeded unless the request says otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from .metrics import Metrics
from .protocol import Refused, engine_error, has_content, prepare
from .settings import LlmSettings

LOG = logging.getLogger("reference_service.llm.gateway")


def error(status: int, code: str, message: str, retry_after: int | None = None) -> JSONResponse:
    """The one error shape: {\"error\": {\"code\", \"message\"}} (no tracebacks, no paths)."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status, headers=headers)


class Gateway:
    """State of one gateway: settings, metrics, engine client, readiness, requests in flight."""

    def __init__(self, settings: LlmSettings, supervisor=None, model_file: Path | None = None) -> None:
        self.s = settings
        self.metrics = Metrics()
        self.supervisor = supervisor
        self.model_file = model_file
        self.model_sha256: str | None = None
        self.engine_url = f"http://{settings.host}:{settings.engine_port}"
        self.client: httpx.AsyncClient | None = None
        self.ready = False
        self.inflight = 0
        self._tasks: list[asyncio.Task] = []
        self._created = time.monotonic()

    async def start(self) -> None:
        limits = httpx.Limits(
            max_connections=self.s.max_inflight + 4, max_keepalive_connections=self.s.max_inflight
        )
        self.client = httpx.AsyncClient(base_url=self.engine_url, limits=limits, timeout=None)
        if self.supervisor is not None:
            self.supervisor.metrics = self.metrics
            await self.supervisor.start()
        if self.model_file is not None:
            from .engine import sha256

            self.model_sha256 = await asyncio.to_thread(sha256, self.model_file)
        self._tasks.append(asyncio.create_task(self._watch_readiness()))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        if self.supervisor is not None:
            await self.supervisor.stop()
        if self.client is not None:
            await self.client.aclose()

    async def _health(self) -> bool:
        try:
            r = await self.client.get("/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def _watch_readiness(self) -> None:
        failures = 0
        while True:
            ok = await self._health()
            if ok and not self.ready:
                if self.supervisor is not None:
                    self.supervisor.mark_ready()
                else:
                    self.metrics.cold_start.set(time.monotonic() - self._created)
            # a busy engine can miss one probe; two misses in a row mean not ready
            failures = 0 if ok else failures + 1
            if ok or failures >= 2:
                self.ready = ok
            self.metrics.engine_ready.set(1 if self.ready else 0)
            await asyncio.sleep(0.5 if ok else 0.25)


async def read_body(request: Request, s: LlmSettings) -> bytes:
    """The whole body within the size cap and the first-token deadline (a stalled upload: 408)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > s.max_body_bytes:
        raise Refused(413, "body_too_large", f"body is {declared} bytes; limit is {s.max_body_bytes}")
    chunks, size = [], 0

    async def _read() -> None:
        nonlocal size
        async for chunk in request.stream():
            size += len(chunk)
            if size > s.max_body_bytes:
                raise Refused(413, "body_too_large", f"body exceeds {s.max_body_bytes} bytes")
            chunks.append(chunk)

    try:
        await asyncio.wait_for(_read(), s.first_token_timeout_s)
    except TimeoutError:
        raise Refused(
            408, "body_timeout", f"body not received within {s.first_token_timeout_s:g} s"
        ) from None
    return b"".join(chunks)


def create_app(settings: LlmSettings, supervisor=None, model_file: Path | None = None) -> FastAPI:
    """The FastAPI app; ``supervisor`` (optional) starts and restarts the engine."""
    gw = Gateway(settings, supervisor, model_file)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        await gw.start()
        try:
            yield
        finally:
            await gw.stop()

    app = FastAPI(
        title="LLM reference service", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.gateway = gw
    s, met = settings, gw.metrics

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException):
        codes = {404: "not_found", 405: "method_not_allowed"}
        return error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    @app.exception_handler(Exception)
    async def _unhandled(_request: Request, exc: Exception):
        LOG.exception("unhandled error")
        return error(500, "internal_error", "internal error")

    @app.get("/healthz")
    async def healthz():
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz():
        if gw.ready:
            return {"status": "ready", "model": s.model_name}
        return error(503, "not_ready", "the engine is not ready", s.retry_after_s)

    @app.get("/metrics")
    async def metrics():
        return Response(generate_latest(met.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/models")
    async def models():
        return {
            "object": "list",
            "data": [
                {
                    "id": s.model_name,
                    "object": "model",
                    "file": model_file.name if model_file else None,
                    "sha256": gw.model_sha256,
                    "engine": {
                        "parallel": s.parallel,
                        "ctx_size": s.ctx_size,
                        "ctx_per_slot": s.ctx_per_slot,
                    },
                }
            ],
        }

    async def handle(request: Request, route: str):
        start = time.perf_counter()
        try:
            resp = await _complete(request, route, start)
        except Refused as exc:
            met.rejected.labels(exc.code).inc()
            resp = error(exc.status, exc.code, exc.message, exc.retry_after)
        if not isinstance(resp, StreamingResponse):  # a stream records itself when it ends
            code = str(resp.status_code)
            met.requests.labels(route, code).inc()
            met.request_seconds.labels(route, code).observe(time.perf_counter() - start)
        return resp

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await handle(request, "chat")

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await handle(request, "completions")

    async def _complete(request: Request, route: str, start: float):
        body = await read_body(request, s)
        fwd = prepare(body, route, s)
        if gw.inflight >= s.max_inflight:
            raise Refused(429, "overloaded", "too many requests in flight; retry later", s.retry_after_s)
        if not gw.ready:
            raise Refused(503, "engine_unavailable", "the engine is not ready; retry later", s.retry_after_s)
        gw.inflight += 1
        met.inflight.set(gw.inflight)
        handed_over = False
        try:
            path = "/v1/chat/completions" if route == "chat" else "/v1/completions"
            if fwd.get("stream"):
                stream = await _open_stream(path, fwd)
                handed_over = True
                return StreamingResponse(
                    _relay(stream, route, start),
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache"},
                )
            try:
                r = await gw.client.post(path, json=fwd, timeout=s.request_timeout_s)
            except httpx.TimeoutException:
                met.engine_errors.labels("timeout").inc()
                raise Refused(504, "engine_timeout", f"no answer within {s.request_timeout_s:g} s") from None
            except httpx.HTTPError:
                met.engine_errors.labels("connect").inc()
                raise Refused(
                    503, "engine_unavailable", "the engine is not reachable", s.retry_after_s
                ) from None
            if r.status_code != 200:
                raise engine_error(r.status_code, r.text)
            doc = r.json()
            usage = doc.get("usage") or {}
            met.prompt_tokens.inc(usage.get("prompt_tokens", 0))
            met.output_tokens.inc(usage.get("completion_tokens", 0))
            return JSONResponse(doc)
        finally:
            if not handed_over:
                gw.inflight -= 1
                met.inflight.set(gw.inflight)

    async def _open_stream(path: str, fwd: dict) -> httpx.Response:
        req = gw.client.build_request("POST", path, json=fwd)
        try:
            r = await asyncio.wait_for(gw.client.send(req, stream=True), s.first_token_timeout_s)
        except TimeoutError:
            met.engine_errors.labels("timeout").inc()
            raise Refused(504, "engine_timeout", f"no answer within {s.first_token_timeout_s:g} s") from None
        except httpx.HTTPError:
            met.engine_errors.labels("connect").inc()
            raise Refused(503, "engine_unavailable", "the engine is not reachable", s.retry_after_s) from None
        if r.status_code != 200:
            text = (await r.aread()).decode(errors="replace")
            await r.aclose()
            raise engine_error(r.status_code, text)
        return r

    async def _relay(r: httpx.Response, route: str, start: float) -> AsyncIterator[bytes]:
        """Pass the engine's events on; record TTFT, inter-token gaps, tokens, and the outcome."""
        code = "200"
        deadline = start + s.request_timeout_s
        first_at: float | None = None
        last_at = 0.0
        lines = r.aiter_lines().__aiter__()
        try:
            while True:
                wait = deadline - time.perf_counter()
                if first_at is None:
                    wait = min(wait, s.first_token_timeout_s)
                try:
                    line = await asyncio.wait_for(lines.__anext__(), max(wait, 0.001))
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    code = "504"
                    met.engine_errors.labels("timeout").inc()
                    msg = {"error": {"code": "engine_timeout", "message": "the answer exceeded its deadline"}}
                    yield f"data: {json.dumps(msg)}\n\n".encode()
                    break
                if line.startswith("data: ") and line != "data: [DONE]":
                    now = time.perf_counter()
                    try:
                        event = json.loads(line[6:])
                    except ValueError:
                        event = {}
                    if has_content(event):
                        if first_at is None:
                            first_at = now
                            met.ttft_seconds.observe(now - start)
                        else:
                            met.itl_seconds.observe(now - last_at)
                        last_at = now
                    usage = event.get("usage") if isinstance(event, dict) else None
                    if usage:
                        met.prompt_tokens.inc(usage.get("prompt_tokens", 0))
                        met.output_tokens.inc(usage.get("completion_tokens", 0))
                yield (line + "\n").encode()
        except httpx.HTTPError:
            code = "502"
            met.engine_errors.labels("stream").inc()
        finally:
            await r.aclose()
            gw.inflight -= 1
            met.inflight.set(gw.inflight)
            met.requests.labels(route, code).inc()
            met.request_seconds.labels(route, code).observe(time.perf_counter() - start)

    return app
