"""One check that trips over an answer of the wrong shape is one unknown finding; the others still run.

The servers here are stand-ins (a stdlib HTTP server on 127.0.0.1): neither Triton nor llama-server
can be made to answer these shapes, which is the point (a proxy, another product, a future API).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from archkit.spec import load_file, load_text
from archkit.verify import Status
from archkit.verify.llamacpp import check_llamacpp
from archkit.verify.triton import check_triton
from tests.llm_engine import SPEC as LLM_SPEC


@contextmanager
def _serving(answers: dict[str, tuple[int, str]]) -> Iterator[str]:
    """An HTTP/1.1 server answering each path (GET or POST) with its (status, body); 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            status, body = answers.get(self.path.split("?")[0], (404, '{"error": "not found"}'))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_llamacpp_props_of_the_wrong_shape_leave_slots_and_metrics_checked() -> None:
    """/props answers a JSON list: the three checks that read it are unknown, each under its own code
    and saying why; the KV and metrics checks, which read /slots and /metrics, still give their verdicts."""
    spec = load_file(LLM_SPEC).spec
    assert spec is not None
    answers = {
        "/health": (200, '{"status": "ok"}'),
        "/props": (200, "[1, 2]"),
        "/slots": (200, json.dumps([{"id": 0, "n_ctx": 8}])),
        "/metrics": (200, "llamacpp:prompt_tokens_total 1\n"),
    }
    with _serving(answers) as url:
        found = {f.code: f for f in check_llamacpp(spec, url, timeout_s=5.0)}
    assert found["VL400"].status is Status.PASS and found["VL401"].status is Status.PASS
    for code in ("VL410", "VL411", "VL412"):
        assert found[code].status is Status.UNKNOWN, found[code]
        assert "malformed (AttributeError" in found[code].message, found[code].message
        assert "\n" not in found[code].message
    # an 8-token slot cannot hold the reference workload's request; the metrics lack most series
    assert found["VL413"].status is Status.DRIFT, found["VL413"].message
    assert found["VL420"].status is Status.DRIFT and "--metrics" in found["VL420"].message


TRITON_SPEC = (
    "apiVersion: archkit/v1\nmetadata: {name: t}\n"
    "dataflow:\n  stages:\n"
    "    - {id: m, kind: model, service: triton,"
    " model: {name: ocr, version: '1', server: triton, device: cpu, instances: 2}}\n"
)


@pytest.mark.parametrize(
    ("metadata", "config", "unknown", "still"),
    [
        # versions not a list: the model check cannot read them, so nothing after it is judged
        ({"name": "ocr", "versions": 5}, {}, "VT210", {}),
        # an instance count that is not a number: only the instance count is unknown
        (
            {"name": "ocr", "versions": ["1"]},
            {"instance_group": [{"count": "two", "kind": "KIND_CPU"}]},
            "VT223",
            {"VT210": Status.PASS, "VT211": Status.PASS, "VT227": Status.PASS},
        ),
    ],
)
def test_triton_answers_of_the_wrong_shape_are_one_unknown_each(metadata, config, unknown, still) -> None:
    spec = load_text(TRITON_SPEC).spec
    answers = {
        "/v2/health/live": (200, ""),
        "/v2/health/ready": (200, ""),
        "/v2/repository/index": (200, json.dumps([{"name": "ocr", "version": "1", "state": "READY"}])),
        "/v2/models/ocr": (200, json.dumps(metadata)),
        "/v2/models/ocr/versions/1/ready": (200, ""),
        "/v2/models/ocr/config": (200, json.dumps(config)),
    }
    with _serving(answers) as url:
        findings = check_triton(spec, url, timeout_s=5.0)
    by_code = {f.code: f for f in findings}
    assert by_code["VT201"].status is Status.PASS and by_code["VT202"].status is Status.PASS
    assert by_code[unknown].status is Status.UNKNOWN, by_code[unknown]
    assert "malformed" in by_code[unknown].message, by_code[unknown].message
    assert {c: by_code[c].status for c in still} == still, [(f.code, f.status, f.message) for f in findings]
    assert [f.code for f in findings].count(unknown) == 1
