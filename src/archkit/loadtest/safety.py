"""The load-test safety rule: traffic only ever goes to loopback addresses.

This workplace forbids sending load anywhere else, so every URL a run would touch (the
target, metrics endpoints, a locust master) is checked here first, by the one endpoint policy
of every command (`archkit.endpoints`) with an empty allow-list: every numeric and IPv6 form is
normalised, names other than `localhost` are not resolved, userinfo and fragments are refused.
"""

from __future__ import annotations

from typing import Any

from archkit.endpoints import EndpointError, is_loopback_url, literal_address, parse_endpoint, require_allowed


class RemoteTargetError(EndpointError):
    """A load test was pointed at a non-loopback address."""


def host_of(url: str) -> str:
    try:
        return parse_endpoint(url).host
    except EndpointError:
        return ""


def is_loopback(url: str) -> bool:
    return is_loopback_url(url)


def require_loopback(url: str, what: str = "target") -> None:
    """Raise RemoteTargetError unless `url` is on 127.0.0.0/8, ::1 or localhost (in any spelling)."""
    try:
        require_allowed(url, (), what)
    except EndpointError as exc:
        raise RemoteTargetError(
            f"refusing to send load to {what} {url!r}: archkit loadtest only targets loopback "
            f"addresses (127.0.0.0/8, ::1, localhost); start the service locally or tunnel it "
            f"to 127.0.0.1 ({exc})"
        ) from None


def is_loopback_address(address: Any) -> bool:
    """A socket address (as connect() takes it) on loopback: 127.0.0.0/8, ::1, ::ffff:127.x, localhost.

    Non-IP addresses (AF_UNIX paths) never leave the machine and pass; a host name other than
    localhost does not (connect() would resolve it). Numeric forms (`127.1`, `0x7f000001`) are
    read as the C library reads them.
    """
    if not isinstance(address, tuple):
        return True
    host = str(address[0])
    if host == "localhost":
        return True
    if "%" in host:  # a zone index: link-local, never loopback
        return False
    ip = literal_address(host)
    return ip is not None and ip.is_loopback
