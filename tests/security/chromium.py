"""One headless Chromium for many pages, driven over the DevTools protocol (loopback only)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

# What the page holds after loading: anything that could run (script elements, event-handler
# attributes, javascript: URLs, frames, objects) and a flag a hostile script would set.
PROBE = """(() => {
  const all = Array.from(document.querySelectorAll('*'));
  return {
    scripts: document.querySelectorAll('script').length,
    frames: document.querySelectorAll('iframe, frame, object, embed, base, meta[http-equiv=refresh]').length,
    handlers: all.filter(e => Array.from(e.attributes).some(a => /^on/i.test(a.name))).map(e => e.tagName),
    js_urls: all.filter(e => Array.from(e.attributes).some(a => /^\\s*javascript:/i.test(a.value))).map(e => e.tagName),
    pwned: window.__pwned === 1,
  };
})()"""


class Browser:
    def __init__(self, ws: Any) -> None:
        self.ws, self.seq, self.events = ws, 0, []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.seq += 1
        mid = self.seq
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                assert "error" not in msg, msg
                return dict(msg.get("result", {}))
            self.events.append(msg)

    def load(self, page: Path) -> None:
        """Navigate to `page` and wait for its load event; `events` then holds what it caused."""
        self.events = []
        self.call("Page.navigate", url=page.as_uri())
        deadline = time.monotonic() + 60
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, f"{page}: no load event"
            self.events.append(json.loads(self.ws.recv()))

    def visit(self, page: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(PROBE's answer, the console/error/request events) of loading `page`."""
        self.load(page)
        found = self.call("Runtime.evaluate", expression=PROBE, returnByValue=True)["result"]["value"]
        return found, list(self.events)


@contextmanager
def browser(profile: Path, flags: Sequence[str] = (), timeout_s: float = 60) -> Iterator[Browser]:
    """Chromium on a private profile with its DevTools endpoint on 127.0.0.1; `flags` are added
    to FLAGS, `timeout_s` bounds its start and each DevTools answer."""
    import websocket

    proc = subprocess.Popen(
        [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            *flags,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "chromium did not start its DevTools endpoint"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        ws = websocket.create_connection(
            next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page"), timeout=timeout_s
        )
        b = Browser(ws)
        for domain in ("Page", "Runtime", "Log", "Network"):
            b.call(f"{domain}.enable")
        yield b
        ws.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
