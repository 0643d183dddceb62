"""Load protocols: how one request of the mix is sent (http, triton-http, triton-grpc, openai-stream).

A protocol is a locust `User` subclass of `base.ServiceUser` under `@register_protocol(NAME)`,
in its own module listed in `BUILTIN`, or shipped by another distribution under an entry point
in the `archkit.load_protocols` group (`NAME = package.module`; a plug-in's name starts with
`x-`, which the spec's `loadtest.target.protocol` accepts). It implements `send(scenario, body)` and reports each request through
locust's request event, a `StreamTrace` in the event's context when it streams.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from archkit.loadtest.runtime.protocols.base import (
    PROTOCOLS,
    ProtocolError,
    ServiceUser,
    Status,
    register_protocol,
)

BUILTIN = (
    "archkit.loadtest.runtime.protocols.http",
    "archkit.loadtest.runtime.protocols.triton",
    "archkit.loadtest.runtime.protocols.openai_stream",
)

ENTRY_POINTS = "archkit.load_protocols"


def protocol(name: str) -> type[ServiceUser]:
    """The user class of a protocol (built-in and plug-in modules are imported on first use)."""
    if name not in PROTOCOLS:
        for mod in BUILTIN:
            importlib.import_module(mod)
        for ep in entry_points(group=ENTRY_POINTS, name=name):
            ep.load()
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ProtocolError(
            f"unknown load protocol {name!r} (have: {', '.join(sorted(PROTOCOLS))})"
        ) from None


__all__ = [
    "BUILTIN",
    "ENTRY_POINTS",
    "PROTOCOLS",
    "ProtocolError",
    "ServiceUser",
    "Status",
    "protocol",
    "register_protocol",
]
