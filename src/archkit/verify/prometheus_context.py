"""What the Prometheus checks share: the server's HTTP API reader and the context of one run.

`prometheus.py` (rules, scrape targets) and `prometheus_slo.py` (VP320) both read through
`PrometheusContext.get`; this module imports neither, so that both build on it.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
from dataclasses import replace
from typing import Any

from archkit.endpoints import EndpointError, open_url
from archkit.errors import ArchkitError
from archkit.spec.model import Spec
from archkit.verify.reach import judge
from archkit.verify.registry import Check
from archkit.verify.source_checks import SourceContext


class Unreachable(ArchkitError):
    """Prometheus did not give a usable answer (refused, an HTTP error, not JSON, too big, too slow)."""


# Prometheus' rules and targets answers for a large server are a few MiB; a body past this is
# not an API answer. The whole answer must arrive within a few timeouts (a body sent one byte at
# a time would otherwise never trip the per-read socket timeout).
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def get(base: str, path: str, timeout_s: float) -> dict:
    """GET `base` + `path` within `timeout_s` -> the answer's `data`; raises `Unreachable`."""
    target = judge(base, (), "Prometheus")
    endpoint = replace(target.endpoint, path=target.endpoint.path.rstrip("/") + path)
    deadline = time.monotonic() + 3 * timeout_s
    try:
        # the endpoint policy: the judged address, redirects only within the allowed set, no proxy
        with open_url(endpoint, target.allow, timeout=timeout_s) as resp:
            chunks: list[bytes] = []
            got = 0
            while chunk := resp.read1(1 << 16):
                got += len(chunk)
                chunks.append(chunk)
                if got > MAX_ANSWER_BYTES:
                    raise Unreachable(f"GET {path}: the answer is over {MAX_ANSWER_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise Unreachable(
                        f"GET {path}: the answer took over {3 * timeout_s:g} s (a stalled body?)"
                    )
        body = json.loads(b"".join(chunks), parse_constant=lambda word: None)
    except urllib.error.HTTPError as exc:
        hint = " (credentials?)" if exc.code in (401, 403) else ""
        raise Unreachable(f"GET {path} answered HTTP {exc.code}{hint}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise Unreachable(f"cannot reach Prometheus at {base}: {getattr(exc, 'reason', exc)}") from None
    except EndpointError as exc:  # a redirect off the allowed set: refused before connecting
        raise Unreachable(str(exc)) from None
    except http.client.HTTPException as exc:  # truncated bodies, answers that are not HTTP
        raise Unreachable(f"GET {path}: a broken HTTP answer ({type(exc).__name__}) from {base}") from None
    except (ValueError, RecursionError):
        raise Unreachable(f"GET {path} did not answer JSON; is {base} a Prometheus server?") from None
    if not isinstance(body, dict):
        raise Unreachable(f"GET {path} did not answer a JSON object; is {base} a Prometheus server?")
    if body.get("status") != "success":
        raise Unreachable(f"GET {path}: {str(body.get('error') or body.get('status'))[:200]}")
    data = body.get("data")
    return data if isinstance(data, dict) else {}


def dicts(value: object) -> list[dict]:
    """The mappings of a list from an answer (anything else in it, or a non-list, is ignored)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class PrometheusContext(SourceContext):
    """The spec, the recorder and the server shared by one run of the Prometheus checks."""

    source_title = "Prometheus"

    def __init__(self, spec: Spec, url: str, timeout_s: float):
        super().__init__(spec, "prometheus")
        self.url, self.timeout_s = url, timeout_s
        self.server = f"server {url}"

    def get(self, path: str) -> dict:
        """The `data` of GET `path` on this server; raises `Unreachable`."""
        return get(self.url, path, self.timeout_s)


class PrometheusCheck(Check):
    """A check against the Prometheus server of one run."""

    def run(self, ctx: PrometheusContext, target: Any) -> None:
        raise NotImplementedError  # pragma: no cover - abstract
