"""The spec's allow-list (`verify.allow_endpoints`, and per environment): what verify may reach
off loopback, read by the one endpoint policy (`archkit.endpoints`).

DNS is a stand-in here (a patched `socket.getaddrinfo`): no resolver answers on this machine.
It maps the test's name to loopback, where a real HTTP server stands in for Prometheus (it
answers 404: enough to show that verify connected instead of refusing). A name the spec does
not allow must be refused before any lookup: the stand-in fails the test if it is asked.
"""

from __future__ import annotations

import http.server
import socket
import threading

import pytest
import yaml
from typer.testing import CliRunner

from archkit import api
from archkit.cli import _load_commands, app
from archkit.endpoints import EndpointError
from archkit.spec import load_text
from tests.conftest import ROOT

SPEC = ROOT / "examples" / "industrial-inspection.yaml"
NAME = "prom.cluster.internal"


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def prometheus():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def lookups(monkeypatch):
    """The names looked up; NAME resolves to loopback, any other lookup fails the test."""
    seen: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in ("127.0.0.1", "::1"):
            return real(host, port, *args, **kwargs)
        seen.append(host)
        assert host == NAME, f"looked up {host!r}"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return seen


def _spec(tmp_path, top: list[str] | None = None, env: list[str] | None = None):
    doc = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    if top is not None:
        doc["verify"] = {"allow_endpoints": top}
    if env is not None:
        doc.setdefault("environments", []).append({"id": "prod", "verify": {"allow_endpoints": env}})
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _ran(result) -> bool:
    return not any("refusing" in f.message for f in result.report.findings)


def test_a_name_the_spec_does_not_allow_is_refused_without_a_lookup(tmp_path, prometheus, lookups):
    """Without an allow-list (flag or spec) no name is looked up: not even a DNS query leaves. (With
    one, a name is resolved once and judged by its addresses: test_endpoints.py.)"""
    with pytest.raises(EndpointError, match="verify.allow_endpoints"):
        api.verify(_spec(tmp_path), timeout_s=2, prometheus_url=f"http://{NAME}:{prometheus}")
    assert lookups == []


def test_a_name_the_spec_allows_is_resolved_once_and_reached(tmp_path, prometheus, lookups):
    path = _spec(tmp_path, top=[NAME])
    result = api.verify(path, timeout_s=2, prometheus_url=f"http://{NAME}:{prometheus}")
    assert result.report is not None and _ran(result)
    assert lookups == [NAME]


def test_an_environment_adds_its_own_endpoints_with_env_only(tmp_path, prometheus, lookups):
    path = _spec(tmp_path, env=[NAME])
    url = f"http://{NAME}:{prometheus}"
    with pytest.raises(EndpointError):
        api.verify(path, timeout_s=2, prometheus_url=url)
    assert lookups == []
    assert _ran(api.verify(path, timeout_s=2, env="prod", prometheus_url=url))
    assert lookups == [NAME]


def test_the_cli_refuses_with_exit_2_and_names_both_ways_to_allow(tmp_path, lookups):
    _load_commands()
    res = CliRunner().invoke(
        app,
        ["verify", str(_spec(tmp_path)), "--prometheus-url", f"http://{NAME}:9090"],
        env={"NO_COLOR": "1"},
    )
    assert res.exit_code == 2 and "--allow-endpoint" in res.output and "verify.allow_endpoints" in res.output
    assert lookups == []


def test_a_malformed_entry_is_a_located_error_when_the_spec_loads():
    text = "\n".join(
        [
            "apiVersion: archkit/v1",
            "metadata: {name: v}",
            "dataflow:",
            "  stages:",
            "    - {id: a, kind: preprocess, p50_ms: 1, p99_ms: 2}",
            "verify:",
            "  allow_endpoints: [10.0.0.0/8, 10.0.0.0/40, '10.0.0.1,10.0.0.2', 'a b']",
        ]
    )
    res = load_text(text, "v.yaml")
    got = sorted((d.line, d.col, d.path) for d in res.diagnostics)
    assert [(line, path) for line, _, path in got] == [
        (7, "verify.allow_endpoints[1]"),
        (7, "verify.allow_endpoints[2]"),
        (7, "verify.allow_endpoints[3]"),
    ]
    assert [col for _, col, _ in got] == [33, 46, 67]
    assert res.spec is None
