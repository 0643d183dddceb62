"""The `verify` section: which endpoints off loopback `archkit verify` may connect to.

archkit reaches only loopback unless told otherwise (`archkit.endpoints`). A spec that is
verified against a live cluster, a remote Triton or a remote Prometheus names those endpoints
here, once, instead of on every command line: `verify.allow_endpoints` for every run, and
`environments[].verify.allow_endpoints` added for a run with `--env` (the staging cluster's
addresses are not production's). Each entry is what `verify --allow-endpoint` takes: an
address in any form the endpoint policy reads, a network (`10.0.0.0/8`) or a host name. A host
name is resolved once, at connection time, and every address it resolves to must be allowed;
nothing here is ever looked up while the spec loads. An endpoint named nowhere is refused
before any connection or DNS query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, Field

from archkit.endpoints import EndpointError, allow_list
from archkit.spec.model import Node

if TYPE_CHECKING:
    from archkit.spec.model import Spec

MAX_ENTRIES = 256  # addresses, networks and names: a cluster's API server, Triton and Prometheus fit in a few


def _entry(value: str) -> str:
    try:
        allow_list([value])  # parses only: a name is never resolved here
    except EndpointError as exc:
        raise ValueError(str(exc)) from None
    if "," in value:
        raise ValueError(f"allow-list entry {value!r}: one entry per item, not comma-separated")
    return value


AllowEntry = Annotated[
    str,
    Field(min_length=1, max_length=253),
    AfterValidator(_entry),
]


class VerifySettings(Node):
    """What `archkit verify` may reach besides loopback."""

    allow_endpoints: list[AllowEntry] = Field(
        default_factory=list,
        max_length=MAX_ENTRIES,
        description="non-loopback endpoints verify may connect to: an address (any form), a network "
        "such as 10.0.0.0/8, or a host name (resolved once when connecting; every address must be "
        "allowed); added to `verify --allow-endpoint`",
    )


def allowed_endpoints(spec: Spec) -> list[str]:
    """The spec's allow-list: `verify.allow_endpoints`, plus the applied environment's (`with_environment`)."""
    env = spec.applied_environment
    extra = env.verify.allow_endpoints if env is not None and env.verify is not None else []
    return [*spec.verify.allow_endpoints, *extra]
