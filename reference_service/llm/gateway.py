"""The LLM gateway: caps, admission, deadlines and golden signals in front of llama-server.

``POST /v1/chat/completions`` and ``POST /v1/completions`` take OpenAI-style JSON; with
``"stream": true`` the engine's server-sent events are relayed as they come. The gateway
refuses what the engine should never see (bodies, prompts and output lengths over the caps:
413/422), admits at most ``max_inflight`` requests (429 with Retry-After beyond: the engine would
only defer them, seed 000 §3.2's bounded queue), answers 503 while the engine is not ready, maps
the engine's context overflow to 400 ``context_overflow``, and makes outputs deterministic:
greedy (temperature 0) and seeded unless the request says otherwise.

With ``settings.embed_port`` set it serves the RAG variant (specs/llm-rag-reference.yaml): a chat
request is validated, its question embedded by a second llama-server (``--embeddings``), the
passage index searched, and the engine asked with the top passages in a system message. The
retrieved passage numbers come back in ``X-RAG-Passages`` and the stages' times in
``Server-Timing``; every stage's time is in ``llm_stage_duration_seconds{stage}`` under the spec's
stage ids.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ..common import gateway as common
from ..common.gateway import OVERLOADED, Admission, gateway_app, retry_after, watch_readiness
from . import rag
from .metrics import Metrics
from .protocol import Refused, engine_error, has_content, prepare
from .settings import LlmSettings

LOG = logging.getLogger("reference_service.llm.gateway")


def error(status: int, code: str, message: str, retry_after_s: int | None = None) -> JSONResponse:
    """The one error shape (common.gateway), with Retry-After when ``retry_after_s`` is given."""
    return common.error(status, code, message, retry_after(retry_after_s))


class Gateway:
    """State of one gateway: settings, metrics, engine client, readiness, requests in flight."""

    def __init__(
        self,
        settings: LlmSettings,
        supervisor=None,
        model_file: Path | None = None,
        embed_supervisor=None,
    ) -> None:
        self.s = settings
        self.metrics = Metrics()
        self.supervisor = supervisor
        self.embed_supervisor = embed_supervisor
        self.model_file = model_file
        self.model_sha256: str | None = None
        self.engine_url = f"http://{settings.host}:{settings.engine_port}"
        self.client: httpx.AsyncClient | None = None
        self.embed_client: httpx.AsyncClient | None = None
        self.engine_ready = False
        self.embed_ready = False
        self.index: rag.Index | None = None
        self.passages: list[str] = []
        self.admission = Admission(settings.max_inflight, self.metrics.inflight)
        self._tasks: list[asyncio.Task] = []
        self._created = time.monotonic()

    async def start(self) -> None:
        limits = httpx.Limits(
            max_connections=self.s.max_inflight + 4, max_keepalive_connections=self.s.max_inflight
        )
        self.client = httpx.AsyncClient(base_url=self.engine_url, limits=limits, timeout=None)
        for name, sup in (("generate", self.supervisor), ("embed", self.embed_supervisor)):
            if sup is not None:
                sup.metrics = self.metrics
                self.metrics.engine_rss.labels(name).set_function(sup.rss_bytes)
                await sup.start()
        if self.model_file is not None:
            from .engine import sha256

            self.model_sha256 = await asyncio.to_thread(sha256, self.model_file)
        self._tasks.append(asyncio.create_task(self._watch_readiness(self.client, self.supervisor, "engine")))
        if self.s.rag:
            embed_url = f"http://{self.s.host}:{self.s.embed_port}"
            self.embed_client = httpx.AsyncClient(base_url=embed_url, limits=limits, timeout=None)
            w = self._watch_readiness(self.embed_client, self.embed_supervisor, "embed")
            self._tasks.append(asyncio.create_task(w))
            self._tasks.append(asyncio.create_task(self._build_index()))

    @property
    def ready(self) -> bool:
        """The engine answers; in the RAG variant the embedder answers and the index is built too."""
        if not self.s.rag:
            return self.engine_ready
        return self.engine_ready and self.embed_ready and self.index is not None

    async def _build_index(self) -> None:
        """The passage index, from the cache or embedded once the embedder is up (its log says so)."""
        self.passages = rag.passages(self.s.rag_passages)
        while not self.embed_ready:
            await asyncio.sleep(0.1)
        key = self.model_sha256 or (self.model_file.name if self.model_file else self.s.model_name)
        path = rag.cache_path(key, self.passages, self.s.rag_index_dir)
        if not path.is_file():
            LOG.warning("embedding %d passages into %s", len(self.passages), path)
        self.index = await rag.load_or_build(path, self.passages, self._embed_for_index)

    async def _embed_for_index(self, text: str) -> np.ndarray:
        """One passage's embedding, tried until it comes (the embedder may restart, or stall while
        the machine is busy): building the index is not a request, so no request deadline holds."""
        while True:
            try:
                return await self.embed(text, timeout_s=max(self.s.embed_timeout_s, 60.0))
            except Refused as exc:
                LOG.warning("embedding a passage failed (%s); trying it again", exc.message)
                await asyncio.sleep(1.0)

    async def embed(self, text: str, timeout_s: float | None = None) -> np.ndarray:
        """The embedding of one text (Refused 503/504 when the embedder is down or too slow)."""
        assert self.embed_client is not None
        timeout = timeout_s if timeout_s is not None else self.s.embed_timeout_s
        try:
            r = await self.embed_client.post("/v1/embeddings", json={"input": text}, timeout=timeout)
        except httpx.TimeoutException:
            self.metrics.engine_errors.labels("embed_timeout").inc()
            raise Refused(504, "embed_timeout", f"no embedding within {timeout:g} s") from None
        except httpx.HTTPError:
            self.metrics.engine_errors.labels("embed_connect").inc()
            raise Refused(
                503, "embedder_unavailable", "the embedding engine is not reachable", self.s.retry_after_s
            ) from None
        if r.status_code != 200:
            raise Refused(503, "embedder_unavailable", f"embedding engine answered {r.status_code}", 1)
        return np.asarray(r.json()["data"][0]["embedding"], dtype=np.float32)

    async def retrieve(self, fwd: dict, timing: dict[str, float]) -> list[int]:
        """Embed the question, search the index, put the passages found into `fwd`'s messages."""
        assert self.index is not None
        t0 = time.perf_counter()
        vec = await self.embed(rag.question_of(fwd["messages"]))
        t1 = time.perf_counter()
        found = self.index.search(vec, self.s.rag_top_k)
        fwd["messages"] = rag.with_passages(fwd["messages"], [self.passages[i] for i in found])
        t2 = time.perf_counter()
        timing["embed"], timing["search"] = t1 - t0, t2 - t1
        self.metrics.stage_seconds.labels("embed").observe(t1 - t0)
        self.metrics.stage_seconds.labels("search").observe(t2 - t1)
        return found

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for sup in (self.supervisor, self.embed_supervisor):
            if sup is not None:
                await sup.stop()
        for client in (self.client, self.embed_client):
            if client is not None:
                await client.aclose()

    @staticmethod
    async def _health(client: httpx.AsyncClient) -> bool:
        try:
            r = await client.get("/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    async def _watch_readiness(self, client: httpx.AsyncClient, supervisor, which: str) -> None:
        """Probe one llama-server's /health; `which` names the flag it sets (engine or embed)."""
        flag = f"{which}_ready"

        def became_ready() -> None:
            if supervisor is not None:
                supervisor.mark_ready()
            elif which == "engine":  # an external engine: time from gateway start
                self.metrics.cold_start.set(time.monotonic() - self._created)

        def set_ready(ok: bool) -> None:
            setattr(self, flag, ok)
            if which == "engine":
                self.metrics.engine_ready.set(1 if ok else 0)

        await watch_readiness(
            lambda: self._health(client), lambda: getattr(self, flag), became_ready, set_ready
        )


async def read_body(request: Request, s: LlmSettings) -> bytes:
    """The whole body within the size cap and the first-token deadline (a stalled upload: 408).

    Not the OCR gateway's reader (reference_service/gateway.py): a prompt is at most 64 KiB of JSON,
    so one deadline bounds it; an image of up to 10 MiB also needs a limit on the gap between
    chunks and a minimum rate there.
    """
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


def server_timing(timing: dict[str, float]) -> str:
    """The stages' times as a Server-Timing header (W3C Server Timing: `name;dur=<ms>`)."""
    return ", ".join(f"{k};dur={v * 1000:.3f}" for k, v in timing.items())


def create_app(
    settings: LlmSettings, supervisor=None, model_file: Path | None = None, embed_supervisor=None
) -> FastAPI:
    """The FastAPI app; ``supervisor`` (optional) starts and restarts the engine, ``embed_supervisor``
    the RAG variant's embedding engine."""
    gw = Gateway(settings, supervisor, model_file, embed_supervisor)
    # This gateway's 405 has always gone out without the Allow header that the OCR gateway's
    # carries; the refactoring that shared the app kept each service's answers as they were.
    app = gateway_app("LLM reference service", gw, gw.metrics.registry, LOG, allow_header=False)
    s, met = settings, gw.metrics

    @app.get("/readyz")
    async def readyz():
        if gw.ready:
            doc = {"status": "ready", "model": s.model_name}
            return {**doc, "passages": len(gw.index)} if gw.index is not None else doc
        return error(503, "not_ready", "the engine is not ready", s.retry_after_s)

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
        t0 = time.perf_counter()
        fwd = prepare(body, route, s)
        timing = {"validate": time.perf_counter() - t0}
        met.stage_seconds.labels("validate").observe(timing["validate"])
        if gw.admission.full:
            raise Refused(429, "overloaded", OVERLOADED, s.retry_after_s)
        if not gw.ready:
            raise Refused(503, "engine_unavailable", "the engine is not ready; retry later", s.retry_after_s)
        gw.admission.enter()
        handed_over = False
        try:
            headers = {}
            if s.rag and route == "chat":
                found = await gw.retrieve(fwd, timing)
                headers["X-RAG-Passages"] = ",".join(map(str, found))
            headers["Server-Timing"] = server_timing(timing)
            path = "/v1/chat/completions" if route == "chat" else "/v1/completions"
            sent = time.perf_counter()
            if fwd.get("stream"):
                stream = await _open_stream(path, fwd)
                handed_over = True
                return StreamingResponse(
                    _relay(stream, route, start, sent),
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", **headers},
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
            answered = time.perf_counter()
            met.stage_seconds.labels("generate").observe(answered - sent)
            doc = r.json()
            usage = doc.get("usage") or {}
            met.prompt_tokens.inc(usage.get("prompt_tokens", 0))
            met.output_tokens.inc(usage.get("completion_tokens", 0))
            met.stage_seconds.labels("relay").observe(time.perf_counter() - answered)
            return JSONResponse(doc, headers=headers)
        finally:
            if not handed_over:  # a stream leaves admission when it ends (_relay)
                gw.admission.leave()

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

    async def _relay(r: httpx.Response, route: str, start: float, sent: float) -> AsyncIterator[bytes]:
        """Pass the engine's events on; record TTFT, inter-token gaps, tokens, and the outcome.

        Stage times: `generate` from sending the request to the engine's last line, `relay` the
        gateway's own work on the lines (parsing, counting; not the waits for the engine)."""
        code = "200"
        deadline = start + s.request_timeout_s
        first_at: float | None = None
        last_at = 0.0
        relay_s = 0.0
        lines = r.aiter_lines().__aiter__()
        try:
            while True:
                wait = deadline - time.perf_counter()
                if first_at is None:
                    wait = min(wait, s.first_token_timeout_s)
                try:
                    line = await asyncio.wait_for(lines.__anext__(), max(wait, 0.001))
                except StopAsyncIteration:
                    met.stage_seconds.labels("generate").observe(time.perf_counter() - sent)
                    break
                except TimeoutError:
                    code = "504"
                    met.engine_errors.labels("timeout").inc()
                    msg = {"error": {"code": "engine_timeout", "message": "the answer exceeded its deadline"}}
                    yield f"data: {json.dumps(msg)}\n\n".encode()
                    break
                got = time.perf_counter()
                if line.startswith("data: ") and line != "data: [DONE]":
                    now = got
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
                data = (line + "\n").encode()
                relay_s += time.perf_counter() - got
                yield data
        except httpx.HTTPError:
            code = "502"
            met.engine_errors.labels("stream").inc()
        finally:
            await r.aclose()
            if code == "200":
                met.stage_seconds.labels("relay").observe(relay_s)
            gw.admission.leave()
            met.requests.labels(route, code).inc()
            met.request_seconds.labels(route, code).observe(time.perf_counter() - start)

    return app
