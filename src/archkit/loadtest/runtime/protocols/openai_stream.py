"""Protocol `openai-stream`: OpenAI-compatible completions streamed as server-sent events, timed per chunk.

Each scenario's payload is the JSON request body (`/v1/chat/completions` with `messages`, or
`/v1/completions` with `prompt`); this protocol adds `"stream": true` and
`"stream_options": {"include_usage": true}` so the last chunk carries `usage` (the token counts
the inter-token gaps are divided by). Timed on the client with `perf_counter` from the moment
the request is written: response headers (stream setup), every chunk with non-empty content
(`choices[0].delta.content` or `choices[0].text`; role-only chunks are not content), the end
(`data: [DONE]` or the end of the body). A server's own `timings` (llama.cpp's prompt and decode
ms) are kept beside them. The client is the standard library's `http.client`, cooperative
under gevent, one keep-alive connection per user.
"""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import urlsplit

from archkit.errors import ArchkitError
from archkit.loadtest.measures import STREAM_KEY, StreamTrace
from archkit.loadtest.runtime.mix import Scenario
from archkit.loadtest.runtime.protocols.base import ServiceUser, fire, register_protocol

DEFAULT_PATH = "/v1/chat/completions"


class StreamError(ArchkitError):
    """The server answered, but not with a usable stream (a status not expected, a broken event)."""


def request_body(body: bytes) -> bytes:
    """The scenario's JSON body with streaming and usage reporting switched on."""
    payload: dict[str, Any] = json.loads(body) if body.strip() else {}
    if not isinstance(payload, dict):
        raise StreamError("the request body must be a JSON object")
    payload["stream"] = True
    options = payload.get("stream_options")
    payload["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def chunk_content(chunk: dict[str, Any]) -> str:
    """The text a chunk adds: chat `delta.content` or completions `text` of its first choice."""
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    first = choices[0]
    delta = first.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "")
    return str(first.get("text") or "")


def read_stream(lines: Any, trace: StreamTrace, t0: float) -> int:
    """Read SSE `data:` lines until `[DONE]` or the end; fill `trace`; return the bytes read."""
    size = 0
    cumulative: int | None = None  # per-chunk usage (vLLM's continuous usage stats), if sent
    for raw in lines:
        size += len(raw)
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue  # blank separators, comments, `event:` lines
        data = line[5:].strip()
        now_ms = (time.perf_counter() - t0) * 1000.0
        if data == b"[DONE]":
            trace.done_ms = now_ms
            break
        try:
            chunk = json.loads(data)
        except ValueError as exc:
            raise StreamError(f"not a JSON event: {data[:80]!r}") from exc
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            raise StreamError(f"error event: {str(chunk['error'])[:160]}")
        usage = chunk.get("usage")
        text = chunk_content(chunk)
        if text:
            trace.content_ms.append(now_ms)
        if isinstance(usage, dict):
            done = usage.get("completion_tokens")
            if isinstance(done, int):
                if text and cumulative is not None:
                    trace.chunk_tokens.append(done - cumulative)
                elif text:
                    trace.chunk_tokens.append(done)
                cumulative = done
                trace.output_tokens = done
            if isinstance(usage.get("prompt_tokens"), int):
                trace.prompt_tokens = usage["prompt_tokens"]
        timings = chunk.get("timings")
        if isinstance(timings, dict):
            trace.server = {k: float(v) for k, v in timings.items() if isinstance(v, int | float)}
    if trace.done_ms is None:
        trace.done_ms = (time.perf_counter() - t0) * 1000.0
    if len(trace.chunk_tokens) != len(trace.content_ms):
        trace.chunk_tokens = []  # usage came only at the end: spread it evenly (StreamTrace.tokens_per_chunk)
    return size


@register_protocol("openai-stream")
class OpenAIStreamUser(ServiceUser):
    """Streams completions from an OpenAI-compatible server and records each request's token timing."""

    abstract = True

    def connect(self) -> None:
        u = urlsplit(self.host or "")
        self.address = (u.hostname or "127.0.0.1", u.port or 80)
        self.base = u.path.rstrip("/")
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(*self.address, timeout=self.runtime.timeout_s)
        return self.conn

    def send(self, sc: Scenario, body: bytes) -> None:
        trace = StreamTrace()
        llm = getattr(sc, "llm", None)
        if llm is not None:  # judged per request by the slo_attainment measure
            objectives = (("ttft_ms", llm.slo_ttft_ms), ("tpot_ms", llm.slo_tpot_ms))
            trace.slo = {k: float(v) for k, v in objectives if v is not None}
        exc: Exception | None = None
        status, size = 0, 0
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **dict(sc.headers)}
        t0 = time.perf_counter()
        try:
            data = request_body(body)
            resp = self._post(sc.method, self.base + (sc.path or DEFAULT_PATH), data, headers)
            trace.setup_ms = (time.perf_counter() - t0) * 1000.0
            status = resp.status
            if status not in sc.expect_status:
                detail = resp.read()[:160].decode("utf-8", "replace")
                raise StreamError(f"status {status}: {detail}")
            size = read_stream(resp, trace, t0)
            size += len(resp.read())  # what follows [DONE]: read to the end so the connection is reused
            if not trace.content_ms:
                raise StreamError("the stream carried no content")
        except Exception as e:  # every failure is a failed request, not a crashed user
            exc = e
            self._drop()  # a half-read response leaves the connection unusable
        elapsed_ms = (time.perf_counter() - t0) * 1000.0
        fire(self, "openai-stream", sc.id, elapsed_ms, size, status, exc, {STREAM_KEY: trace})

    def _post(self, method: str, path: str, data: bytes, headers: dict[str, str]) -> http.client.HTTPResponse:
        """Send on the kept-alive connection; once more on a new one if the server had closed it while idle.

        Servers close idle keep-alive connections (llama-server after 5 s); a client finds out
        only when it writes. Like every HTTP client library, the request is sent again at once on
        a fresh connection (the few microseconds of the failed write stay in its time).
        """
        reused = self.conn is not None
        try:
            conn = self._connection()
            conn.request(method, path, body=data, headers=headers)
            return conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            if not reused:
                raise
            self._drop()
            conn = self._connection()
            conn.request(method, path, body=data, headers=headers)
            return conn.getresponse()

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
