"""A toy load protocol and a toy measure, installed the way a third party ships them (entry points).

This follows docs/development.md ("Adding a load protocol", "Adding a measure"): a module with
a `ServiceUser` subclass under `@register_protocol("x-NAME")`, one with a `Measure` subclass under
`@register_measure` (no locust: the runner imports it), and a distribution whose entry points
name them. The distribution is
a real `.dist-info` folder on the path of the test and of the load-generator process it starts.
The run is real: the runner, a worker process, locust and the toy HTTP service.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from archkit import api
from archkit.loadtest.measures import MEASURES

from .conftest import toy_spec

pytestmark = pytest.mark.live

PLUGIN = '''
"""archkit_toyload: protocol x-toy (one GET with http.client)."""

import http.client
import time
from urllib.parse import urlsplit

from archkit.loadtest.runtime.protocols.base import ServiceUser, fire, register_protocol


@register_protocol("x-toy")
class ToyUser(ServiceUser):
    """GETs the scenario's path; any 2xx counts."""

    abstract = True

    def connect(self):
        u = urlsplit(self.host)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=self.runtime.timeout_s)

    def send(self, sc, body):
        t0 = time.perf_counter()
        self.conn.request("GET", sc.path or "/")
        resp = self.conn.getresponse()
        resp.read()
        ok = 200 <= resp.status < 300
        fire(self, "x-toy", sc.id, (time.perf_counter() - t0) * 1000.0, 0, resp.status,
             None if ok else RuntimeError(f"status {resp.status}"))
'''

# A measure is read by the runner too (it summarises it), which never imports locust: its own module.
MEASURE = '''
"""archkit_toymeasure: measure twice_ms."""

from archkit.loadtest.measures import Measure, register_measure


@register_measure
class Twice(Measure):
    """Twice the latency from the actual send: a measure any request has."""

    name = "twice_ms"
    title = "twice the latency from send"

    def values(self, sample):
        return (2 * sample.from_send_ms,)
'''


@pytest.fixture
def toyload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "archkit_toyload.py").write_text(PLUGIN, encoding="utf-8")
    (site / "archkit_toymeasure.py").write_text(MEASURE, encoding="utf-8")
    info = site / "archkit_toyload-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: archkit-toyload\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [archkit.load_protocols]
            x-toy = archkit_toyload

            [archkit.load_measures]
            twice = archkit_toymeasure
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))  # the runner (this process) summarises the measure
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    )
    yield
    MEASURES.pop("twice_ms", None)


def test_a_plugin_protocol_and_measure_run_through_the_load_test(toyload, toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=10)
    spec = toy_spec(
        tmp_path,
        toy.port,
        **{
            "loadtest.target.protocol": "x-toy",
            "loadtest.scenarios": [{"id": "peek", "method": "GET", "path": "/peek"}],
        },
    )
    res = api.loadtest(spec, "baseline", rate=20, duration=2, prometheus=False, plots=False).result
    assert "locust" not in sys.modules  # the measure's module kept the runner free of gevent
    e2e = res.measured["end_to_end"]
    assert e2e["requests"] == 40 and e2e["errors"] == 0, (e2e, res.data.log[-2000:])
    twice = e2e["measures"]["twice_ms"]
    assert twice["count"] == 40
    # HDR keeps 3 significant digits: twice the median is the median of twice, to 0.2 %
    assert twice["p50_ms"] == pytest.approx(2 * e2e["from_send"]["p50_ms"], rel=0.002)
    assert e2e["from_send"]["p50_ms"] >= 10  # the toy's delay: the plug-in really waited for answers
