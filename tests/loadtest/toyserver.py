"""A tiny HTTP service for load-test tests: controllable delay, its own timing log and a Prometheus histogram.

Run: python toyserver.py --port 8123 [--delay-ms 5] [--jitter-ms 0] [--max-inflight 0] [--workers 0]
- any path but the ones below answers 200 after the configured delay (a thread per request);
- POST /control {"delay_ms", "jitter_ms", "error_rate", "max_inflight"} changes the behaviour live;
- GET /metrics: `toy_request_duration_seconds` histogram and `toy_requests_total{code}` (exposition
  text written by hand: prometheus_client is not installed here);
- GET /timings: every request's server-side duration in ms (the independent measurement);
- GET /redirect?to=URL answers 302 with Location URL (the loopback rule must hold for redirects);
- beyond max_inflight concurrent requests it answers 429 at once (fast, bounded errors);
- with --workers N only N requests are served at a time, the rest wait in a queue (so latency
  grows past capacity: queues piling up); the wait counts in the server-side time.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5)


class State:
    """Behaviour knobs and what was measured."""

    def __init__(self, delay_ms: float, jitter_ms: float, max_inflight: int, workers: int = 0) -> None:
        self.lock = threading.Lock()
        self.capacity = threading.Semaphore(workers) if workers else None
        self.delay_ms, self.jitter_ms, self.max_inflight, self.error_rate = (
            delay_ms,
            jitter_ms,
            max_inflight,
            0.0,
        )
        self.inflight = 0
        self.timings: list[float] = []
        self.bucket_counts = [0] * len(BUCKETS)
        self.sum_s = 0.0
        self.count = 0
        self.codes: dict[int, int] = {}

    def observe(self, seconds: float, code: int) -> None:
        with self.lock:
            self.timings.append(seconds * 1000.0)
            self.sum_s += seconds
            self.count += 1
            for i, b in enumerate(BUCKETS):
                if seconds <= b:
                    self.bucket_counts[i] += 1
            self.codes[code] = self.codes.get(code, 0) + 1

    def exposition(self) -> str:
        with self.lock:
            lines = ["# TYPE toy_request_duration_seconds histogram"]
            for b, c in zip(BUCKETS, self.bucket_counts, strict=False):
                lines.append(f'toy_request_duration_seconds_bucket{{le="{b}"}} {c}')
            lines.append(f'toy_request_duration_seconds_bucket{{le="+Inf"}} {self.count}')
            lines.append(f"toy_request_duration_seconds_sum {self.sum_s}")
            lines.append(f"toy_request_duration_seconds_count {self.count}")
            lines.append("# TYPE toy_requests_total counter")
            for code, n in sorted(self.codes.items()):
                lines.append(f'toy_requests_total{{code="{code}"}} {n}')
            lines.append(f"toy_inflight {self.inflight}")
        return "\n".join(lines) + "\n"


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:
            pass

        def _send(self, code: int, body: bytes, ctype: str = "text/plain") -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> bytes:
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def do_GET(self) -> None:
            if self.path.startswith("/redirect?to="):  # a 302 to anywhere (the loopback-rule test)
                target = urllib.parse.unquote(self.path.split("=", 1)[1])
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if self.path == "/metrics":
                return self._send(200, state.exposition().encode(), "text/plain; version=0.0.4")
            if self.path == "/timings":
                with state.lock:
                    data = json.dumps(state.timings).encode()
                return self._send(200, data, "application/json")
            self._work()

        def do_POST(self) -> None:
            if self.path == "/control":
                cfg = json.loads(self._body() or b"{}")
                with state.lock:
                    for k in ("delay_ms", "jitter_ms", "error_rate", "max_inflight"):
                        if k in cfg:
                            setattr(state, k, cfg[k])
                return self._send(200, b"ok")
            self._work()

        do_PUT = do_POST

        def _work(self) -> None:
            start = time.perf_counter()
            self._body()
            with state.lock:
                busy = state.max_inflight and state.inflight >= state.max_inflight
                if not busy:
                    state.inflight += 1
                delay, jitter, err = state.delay_ms, state.jitter_ms, state.error_rate
            if busy:
                self._send(429, b"busy")
                state.observe(time.perf_counter() - start, 429)
                return
            try:
                if state.capacity is not None:
                    with state.capacity:
                        time.sleep(max(0.0, delay + random.uniform(0, jitter)) / 1000.0)
                else:
                    time.sleep(max(0.0, delay + random.uniform(0, jitter)) / 1000.0)
                code = 500 if err and random.random() < err else 200
                self._send(code, b'{"ok": true}', "application/json")
            finally:
                with state.lock:
                    state.inflight -= 1
            state.observe(time.perf_counter() - start, code)

    return Handler


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--max-inflight", type=int, default=0)
    ap.add_argument("--workers", type=int, default=0)
    args = ap.parse_args(argv)
    state = State(args.delay_ms, args.jitter_ms, args.max_inflight, args.workers)
    # listen backlog: the default 5 drops SYNs when users connect at once (a 1 s retransmit each)
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(state))
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
