"""A tiny stand-in for the Kubernetes API server's list endpoints, on 127.0.0.1.

No real API server (kube-apiserver needs etcd, certificates and root) can run on this
machine, so the live path — the real `kubernetes` client, a real kubeconfig, real HTTP —
is tested against this: it serves list responses (`limit`/`continue` pagination, the
`Status` bodies of 401/403/410/500) from fixture objects, and records every call so tests
can count them. It implements only what `archkit verify` uses: GET on collections.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

TOKEN = "archkit-test-token"

# resource -> (API prefix, kind, namespaced)
RESOURCES = {
    "nodes": ("/api/v1", "Node", False),
    "pods": ("/api/v1", "Pod", True),
    "services": ("/api/v1", "Service", True),
    "persistentvolumeclaims": ("/api/v1", "PersistentVolumeClaim", True),
    "persistentvolumes": ("/api/v1", "PersistentVolume", False),
    "secrets": ("/api/v1", "Secret", True),
    "deployments": ("/apis/apps/v1", "Deployment", True),
    "statefulsets": ("/apis/apps/v1", "StatefulSet", True),
    "daemonsets": ("/apis/apps/v1", "DaemonSet", True),
    "networkpolicies": ("/apis/networking.k8s.io/v1", "NetworkPolicy", True),
    "storageclasses": ("/apis/storage.k8s.io/v1", "StorageClass", False),
}


def _status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class StandIn:
    """The stand-in server: objects to serve, faults to inject, and a log of calls."""

    def __init__(self, objects: list[dict], tls: tuple[str, str] | None = None):
        self.objects = objects
        self.calls: list[tuple[str, dict]] = []
        self.forbidden_all: set[str] = set()  # resources whose all-namespaces list answers 403
        self.forbidden: set[str] = set()  # resources forbidden everywhere
        self.expire_on_page: dict[str, int] = {}  # resource -> page number that answers 410
        self.error_on_page: dict[str, int] = {}  # resource -> page number that answers 500
        self.delay_s: dict[str, float] = {}  # resource -> seconds to wait before answering
        self.lock = threading.Lock()
        self._by_kind: dict[str, list[dict]] = {}
        for o in objects:
            self._by_kind.setdefault(o["kind"], []).append(o)
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls is not None:  # (certfile, keyfile): serve HTTPS, as an in-cluster API server does
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> StandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls_to(self, resource: str) -> int:
        return sum(1 for path, _ in self.calls if path.rstrip("/").endswith("/" + resource))

    def kubeconfig(self, path: Path, token: str = TOKEN) -> Path:
        """A kubeconfig with two contexts: `standin` (good token) and `stranger` (a token it refuses)."""
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [
                {"name": "reader", "user": {"token": token}},
                {"name": "stranger", "user": {"token": "not-the-token"}},
            ],
            "contexts": [
                {"name": "standin", "context": {"cluster": "standin", "user": "reader"}},
                {"name": "stranger", "context": {"cluster": "standin", "user": "stranger"}},
            ],
        }
        path.write_text(json.dumps(cfg), encoding="utf-8")
        return path

    # ---- request handling
    def _route(self, path: str) -> tuple[str, str | None] | None:
        for resource, (prefix, _kind, namespaced) in RESOURCES.items():
            if path == f"{prefix}/{resource}":
                return resource, None
            if namespaced and path.startswith(f"{prefix}/namespaces/") and path.endswith(f"/{resource}"):
                ns = path[len(f"{prefix}/namespaces/") : -len(f"/{resource}")]
                if "/" not in ns:
                    return resource, ns
        return None

    def answer(self, path: str, query: dict, auth: str) -> tuple[int, dict]:
        with self.lock:
            self.calls.append((path, query))
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or token != TOKEN:  # the scheme is case-insensitive (RFC 7235)
            return 401, _status(401, "Unauthorized", "Unauthorized")
        route = self._route(path)
        if route is None:
            return 404, _status(404, "NotFound", f"the server could not find the requested resource {path}")
        resource, ns = route
        prefix, kind, namespaced = RESOURCES[resource]
        group = prefix.split("/")[2] if prefix.startswith("/apis/") else ""
        who = "system:serviceaccount:archkit:verify"
        if (
            resource in self.forbidden
            or resource == "secrets"
            or (ns is None and namespaced and resource in self.forbidden_all)
        ):
            scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
            return 403, _status(
                403,
                "Forbidden",
                f"{resource}{'.' + group if group else ''} is forbidden: User "
                f'"{who}" cannot list resource "{resource}" in API group "{group}" {scope}',
            )
        if resource in self.delay_s:
            time.sleep(self.delay_s[resource])
        items = [o for o in self._by_kind.get(kind, []) if ns is None or o["metadata"].get("namespace") == ns]
        limit = int(query.get("limit", ["0"])[0] or 0)
        token = query.get("continue", [""])[0]
        start = int(base64.b64decode(token).decode()) if token else 0
        page = start // limit + 1 if limit else 1
        if self.expire_on_page.get(resource) == page:
            return 410, _status(
                410,
                "Expired",
                "The provided continue parameter is too old to display a "
                "consistent list result. You can start a new list without the continue parameter.",
            )
        if self.error_on_page.get(resource) == page:
            return 500, _status(500, "InternalError", "etcdserver: request timed out")
        end = start + limit if limit else len(items)
        body_items = []
        for o in items[start:end]:
            o = dict(o)
            o.pop("kind", None)  # list items carry no kind/apiVersion, as from the real server
            o.pop("apiVersion", None)
            body_items.append(o)
        meta: dict = {"resourceVersion": "4242"}
        if end < len(items):
            meta["continue"] = base64.b64encode(str(end).encode()).decode()
            meta["remainingItemCount"] = len(items) - end
        return 200, {
            "kind": f"{kind}List",
            "apiVersion": prefix.split("/", 2)[-1] if group else "v1",
            "metadata": meta,
            "items": body_items,
        }

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                url = urlparse(self.path)
                code, body = standin.answer(
                    url.path, parse_qs(url.query), self.headers.get("Authorization", "")
                )
                data = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args):  # keep test output quiet
                pass

        return Handler
