"""The review page in headless Chromium (DevTools protocol): no console errors, no network, four diagrams shown."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from archkit import api
from tests.conftest import EXAMPLES

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SPEC = next(p for p in EXAMPLES if p.stem == "recommendation")
MEASURED = {"stages": {"rank": {"p50_ms": 30, "p99_ms": 140}, "gateway": {"p50_ms": 1, "p99_ms": 4}},
            "end_to_end": {"p50_ms": 70, "p95_ms": 180, "p99_ms": 900, "throughput_rps": 1200, "error_rate": 0.001}}


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("review")
    res = api.render(SPEC, out, only=["review"], measured=MEASURED)
    assert res.write.ok and res.write.written == ["review.html"]
    return out / "review.html"


def test_page_is_self_contained(page):
    html = page.read_text(encoding="utf-8")
    assert "<script" not in html.lower()
    # nothing that makes a browser fetch: no src attributes, no external hrefs, no CSS imports
    assert " src=" not in html and "@import" not in html and "url(http" not in html
    assert 'href="http' not in html and "href='http" not in html
    assert html.count("<svg ") >= 4
    assert "measured" in html and 'class="num over"' in html  # rank P99 140 ms > 90 ms budget


@pytest.mark.live
def test_chromium_shows_four_diagrams_without_errors_or_requests(page, tmp_path, artifacts_dir):
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    websocket = pytest.importorskip("websocket")
    profile = tmp_path / "profile"
    proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                             "--no-first-run", "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-address=127.0.0.1",
                             "--remote-debugging-port=0", "--window-size=1400,1000", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "chromium did not start its DevTools endpoint"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        ws = websocket.create_connection(ws_url, timeout=30)
        seq = iter(range(1, 10_000))
        events: list[dict] = []

        def call(method: str, **params):
            mid = next(seq)
            ws.send(json.dumps({"id": mid, "method": method, "params": params}))
            while True:
                msg = json.loads(ws.recv())
                if msg.get("id") == mid:
                    assert "error" not in msg, msg
                    return msg.get("result", {})
                events.append(msg)

        for domain in ("Page", "Runtime", "Log", "Network"):
            call(f"{domain}.enable")
        call("Page.navigate", url=page.as_uri())
        while not any(e.get("method") == "Page.loadEventFired" for e in events):
            events.append(json.loads(ws.recv()))
        rects = call("Runtime.evaluate", returnByValue=True, expression="""
            Array.from(document.querySelectorAll('section.diagram-section figure svg')).map(s => {
              const r = s.getBoundingClientRect(); return [s.closest('section').id, r.width, r.height]; })
        """)["result"]["value"]
        shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        (artifacts_dir / "review-page.png").write_bytes(base64.b64decode(shot["data"]))
        time.sleep(0.3)
        ws.settimeout(0.5)
        try:
            while True:
                events.append(json.loads(ws.recv()))
        except websocket.WebSocketTimeoutException:
            pass  # no more events queued
        ws.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    console = [e for e in events if e.get("method") == "Runtime.consoleAPICalled"
               or e.get("method") == "Runtime.exceptionThrown"
               or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert not console, console
    urls = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert all(u == page.as_uri() or u.startswith("data:") for u in urls), urls
    shown = {sid for sid, w, h in rects if w > 100 and h > 100}
    assert {"dataflow", "controlflow", "topology", "faulttrees"} <= shown, rects
