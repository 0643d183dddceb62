"""A small OpenAI-compatible streaming server (standard library only) with exactly timed chunks, for tests.

POST /v1/chat/completions (or /v1/completions) answers with server-sent events: a role-only chunk
at once (not a token), then `--chunks` content chunks, the first `--first-ms` after the request
arrived and each next one `--gap-ms` after the previous, carrying the tokens of `--tokens`
(a comma-separated pattern repeated over the chunks, e.g. `1,3`); then a usage chunk with
`completion_tokens` = the tokens sent, and `data: [DONE]`. With `--usage-per-chunk` every content
chunk also carries the cumulative usage (vLLM's `continuous_usage_stats`); with
`--honour-max-tokens` a request gets one chunk per token of its `max_tokens`. GET /log returns, per
request, the perf_counter times the content chunks were written (for comparing gaps).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG: list[dict] = []
LOCK = threading.Lock()


def make_handler(args: argparse.Namespace) -> type[BaseHTTPRequestHandler]:
    pattern = [int(x) for x in args.tokens.split(",")]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_a) -> None:
            pass

        def do_GET(self) -> None:
            with LOCK:
                body = json.dumps(LOG).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _event(self, obj: object) -> None:
            if isinstance(obj, dict):  # the envelope every OpenAI-compatible chunk has
                kind = (
                    "chat.completion.chunk" if self.path.endswith("/chat/completions") else "text_completion"
                )
                obj = {"id": "cmpl-1", "object": kind, "created": 0, "model": "toy", **obj}
            data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def do_POST(self) -> None:
            t_in = time.perf_counter()
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            chat = self.path.endswith("/chat/completions")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if chat:
                self._event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            sent, times = 0, []
            wanted = req.get("max_tokens") or req.get("max_completion_tokens")
            chunks = int(wanted or args.chunks) if args.honour_max_tokens else args.chunks
            for i in range(chunks):
                due = t_in + (args.first_ms + i * args.gap_ms) / 1000.0
                time.sleep(max(0.0, due - time.perf_counter()))
                k = pattern[i % len(pattern)]
                sent += k
                text = "x" * k
                choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
                chunk: dict = {"choices": [choice]}
                if args.usage_per_chunk:
                    chunk["usage"] = {"prompt_tokens": 7, "completion_tokens": sent}
                times.append(time.perf_counter())
                self._event(chunk)
            usage = {"prompt_tokens": 7, "completion_tokens": sent, "total_tokens": 7 + sent}
            self._event({"choices": [], "usage": usage, "timings": {"prompt_ms": 1.5, "predicted_ms": 9.0}})
            self._event(b"[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            with LOCK:
                LOG.append({"in": t_in, "chunks": times, "request": req})

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--first-ms", type=float, default=50.0)
    ap.add_argument("--gap-ms", type=float, default=20.0)
    ap.add_argument("--chunks", type=int, default=5)
    ap.add_argument("--tokens", default="1")
    ap.add_argument("--usage-per-chunk", action="store_true")
    ap.add_argument("--honour-max-tokens", action="store_true", help="one chunk per requested token")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args))
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
