"""Every command that connects, against every form of `forms.py`, in one process (run under strace).

Started by test_policy_isolated.py inside an isolated network namespace; prints one JSON line
per (command, form) with what happened: `refused` (the policy said no before connecting) or `ran`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from archkit import api
from archkit.calibrate.triton import Client
from archkit.errors import InputError
from archkit.verify.state import StateError, read_live
from tests.endpoints.forms import FORMS, REFUSED

SPEC = Path(__file__).resolve().parents[2] / "examples" / "industrial-inspection.yaml"


class _Redirecting(BaseHTTPRequestHandler):
    """Answers a request under /redirect with a 302 off loopback, any other with a 404."""

    def do_GET(self):  # noqa: N802
        if not self.path.startswith("/redirect"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(302)
        self.send_header("Location", "http://10.0.0.1:8000/api/v1/rules")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _verify(option: str, url: str) -> str:
    try:
        result = api.verify(SPEC, timeout_s=2, **{option: url})
    except InputError:
        return "refused"
    texts = [f.message for f in result.report.findings]
    return "refused" if any("refusing" in t for t in texts) else "ran"


def _cluster(url: str, tmp: Path) -> str:
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    try:
        read_live(str(kubeconfig), timeout_s=2, kinds=["Node"])
    except (InputError, StateError):
        return "refused"
    return "ran"


def _calibrate(url: str) -> str:
    try:
        client = Client(url, timeout_s=2)
    except InputError:
        return "refused"
    with contextlib.suppress(Exception):  # the stand-in is no Triton: any answer means it connected
        client.config("m")
    return "ran"


def _loadtest(url: str) -> str:
    try:
        api.loadtest(SPEC, host=url, duration=1, prometheus=False, plots=False)
    except InputError:
        return "refused"
    return "ran"


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    print(json.dumps({"port": port}), flush=True)
    only = set(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        for form in FORMS:
            url = form.format(port=port)
            runs = {
                "verify --triton-url": lambda u=url: _verify("triton_url", u),
                "verify --prometheus-url": lambda u=url: _verify("prometheus_url", u),
                "verify cluster": lambda u=url: _cluster(u, Path(tmp)),
                "calibrate": lambda u=url: _calibrate(u),
            }
            if form in REFUSED:  # refused before anything starts: no load is ever sent
                runs["loadtest"] = lambda u=url: _loadtest(u)
            for command, run in runs.items():
                if only and command not in only:
                    continue
                print(json.dumps({"command": command, "form": form, "got": run()}), flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
