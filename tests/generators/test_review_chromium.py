"""review.html in a real headless Chromium: zoom and pan one diagram, follow one node link.

The page holds no script (its CSP allows none): zoom is radio buttons and CSS, pan is the
view's own scrolling. The test drives the page over the DevTools protocol as a user would
(clicks and a mouse wheel), and fails on any console error or any request that leaves file://.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT
from tests.security.chromium import CHROMIUM, Browser, browser

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() or not shutil.which("dot") or not shutil.which("java"),
    reason="needs chromium, dot and java (make setup)",
)


def _eval(b: Browser, expression: str) -> Any:
    return b.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")


def _centre(b: Browser, selector: str) -> tuple[float, float]:
    r = _eval(
        b,
        f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
        " return [r.left + r.width / 2, r.top + r.height / 2]; })()",
    )
    return float(r[0]), float(r[1])


def _click(b: Browser, selector: str) -> None:
    _eval(b, f"document.querySelector({json.dumps(selector)}).scrollIntoView({{block: 'center'}})")
    x, y = _centre(b, selector)
    for kind in ("mousePressed", "mouseReleased"):
        b.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def _navigated(b: Browser, ends_with: str, timeout_s: float = 30) -> None:
    """Wait for the main frame to commit a document whose URL ends with `ends_with`, then for its
    load event, reading the DevTools events (Page.frameNavigated, Page.loadEventFired).

    Polling `location` with Runtime.evaluate instead raced the navigation: an evaluation sent
    while the old document was being replaced was answered "Inspected target navigated or
    closed" (seen once on a busy machine). Nothing is evaluated until the new document loaded.
    """
    deadline = time.monotonic() + timeout_s
    seen, committed = 0, False
    while True:
        while seen < len(b.events):
            event = b.events[seen]
            seen += 1
            if event.get("method") == "Page.frameNavigated":
                frame = event["params"]["frame"]
                committed = committed or (not frame.get("parentId") and frame["url"].endswith(ends_with))
            elif committed and event.get("method") == "Page.loadEventFired":
                return
        assert time.monotonic() < deadline, "the node link did not navigate"
        b.events.append(json.loads(b.ws.recv()))


def _settle(b: Browser, seconds: float = 0.5) -> None:
    # awaitPromise: without it Runtime.evaluate returns the pending promise at once and the
    # "pause" is no pause at all, which a busy CI machine exposed (the wheel poll ran out in ms)
    b.call(
        "Runtime.evaluate",
        expression=f"new Promise(r => setTimeout(r, {int(seconds * 1000)}))",
        awaitPromise=True,
    )


def test_review_page_zooms_pans_and_follows_a_node_link(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "archkit",
            "render",
            str(ROOT / "examples" / "recommendation.yaml"),
            "-o",
            str(out),
        ]
        + ["--image-format", "svg"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (out / "review.html").is_file(), proc.stderr
    profile = tmp_path / "profile"
    profile.mkdir()
    with browser(profile) as b:
        b.call(
            "Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False
        )
        found, events = b.visit(out / "review.html")
        assert found["scripts"] == 0 and not found["handlers"]
        view = "#view-dataflow"
        fit = _eval(b, f"document.querySelector('{view} svg').getBoundingClientRect().width")
        box = _eval(b, f"document.querySelector('{view}').clientWidth")
        assert abs(fit - box) < 2, (fit, box)  # fit: the diagram is as wide as its view
        _click(b, "label[for=z-dataflow-200]")
        _settle(b)
        zoomed = _eval(b, f"document.querySelector('{view} svg').getBoundingClientRect().width")
        assert zoomed > 1.9 * fit, (zoomed, fit)
        # pan: a wheel over the view scrolls it sideways
        _eval(b, f"document.querySelector('{view}').scrollIntoView({{block: 'center'}})")
        _settle(b)
        x, y = _centre(b, view)
        b.call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=400, deltaY=0)
        # Chromium scrolls smoothly: poll for up to 6 s instead of one fixed pause
        scrolled = 0.0
        for _ in range(24):
            _settle(b, 0.25)
            scrolled = _eval(b, f"document.querySelector('{view}').scrollLeft")
            if scrolled > 100:
                break
        assert scrolled > 100, scrolled
        # full-size view opens over the page
        _click(b, "label[for=z-dataflow-full]")
        _settle(b)
        assert _eval(b, f"getComputedStyle(document.querySelector('{view}')).position") == "fixed"
        _click(b, "label[for=z-dataflow-full]")
        _settle(b)
        # follow one node link: the stage's section of its onboarding page
        # the first node with a link (edges carry only tooltips)
        href = _eval(
            b,
            f"(() => {{ window.__link = Array.from(document.querySelectorAll('{view} svg a'))"
            ".find(a => a.getAttribute('xlink:href') || a.getAttribute('href'));"
            " if (!window.__link) return null; window.__link.scrollIntoView({block: 'center'});"
            " return window.__link.getAttribute('xlink:href') || window.__link.getAttribute('href'); })()",
        )
        assert href and href.startswith("runbooks/onboarding/") and "#stage-" in href, href
        rect = _eval(
            b,
            "(() => { const r = window.__link.getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()",
        )
        b.events = []
        for kind in ("mousePressed", "mouseReleased"):
            b.call("Input.dispatchMouseEvent", type=kind, x=rect[0], y=rect[1], button="left", clickCount=1)
        path, _, frag = href.partition("#")
        _navigated(b, path)
        assert _eval(b, "location.hash") == f"#{frag}"
        assert f'<a id="{frag}"></a>' in (out / path).read_text(encoding="utf-8")
        events += b.events
    errors = [
        e
        for e in events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")
    ]
    assert not errors, errors
    requests = [
        e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"
    ]
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
