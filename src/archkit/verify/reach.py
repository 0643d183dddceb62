"""How verify reaches a live endpoint: the one endpoint policy (`archkit.endpoints`) with verify's allow-list.

Loopback is always allowed; anything else only when `archkit verify --allow-endpoint` (or
`api.verify(allow_endpoints=...)`, or the spec's `verify.allow_endpoints`, `archkit.spec.verify_policy`)
names it, as an address in any form, a network or a host name.
A source judges its URL once in `read` (a refusal stops the run with exit 2 before any
connection) and hands its checks a `Target`: the URL as the user wrote it (for messages and the
report) carrying the judged endpoint, so the checks connect to the judged address and never
look the name up again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from archkit.endpoints import AllowList, Endpoint, allow_list, require_allowed

ALLOW_HINT = (
    "; to verify a remote endpoint name it with --allow-endpoint ADDRESS|NETWORK|HOST "
    "or in the spec's verify.allow_endpoints"
)
PROVIDER = "allow_endpoints"  # the providers key api.verify fills with the AllowList


class Target(str):
    """A URL (the text as given) judged by the endpoint policy: `endpoint` and the `allow` list it passed."""

    endpoint: Endpoint
    allow: AllowList

    def __new__(cls, url: str, endpoint: Endpoint, allow: AllowList) -> Target:
        obj = super().__new__(cls, url)
        obj.endpoint, obj.allow = endpoint, allow
        return obj


def allowed(providers: Mapping[str, Any]) -> AllowList:
    """The allow-list the caller gave (empty: loopback only)."""
    return allow_list(providers[PROVIDER]() if PROVIDER in providers else ())


def judge(url: str, allow: AllowList | Iterable[str] = (), what: str = "endpoint") -> Target:
    """`url` judged (EndpointError, an InputError, when refused); a Target is returned as it is."""
    if isinstance(url, Target):
        return url
    allow = allow_list(allow)
    return Target(url, require_allowed(url, allow, what, ALLOW_HINT), allow)
