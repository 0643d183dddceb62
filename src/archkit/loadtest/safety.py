"""The load-test safety rule: traffic only ever goes to loopback addresses.

This workplace forbids sending load anywhere else, so every URL a run would touch (the
target, metrics endpoints, a locust master) is checked here first. Names are not resolved:
only `localhost` and literal loopback addresses (127.0.0.0/8, ::1) pass.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from archkit.errors import InputError
from archkit.machine import is_loopback_host


class RemoteTargetError(InputError, ValueError):
    """A load test was pointed at a non-loopback address."""


def host_of(url: str) -> str:
    return urlsplit(url if "://" in url else "//" + url).hostname or ""


def is_loopback(url: str) -> bool:
    return is_loopback_host(url)


def require_loopback(url: str, what: str = "target") -> None:
    """Raise RemoteTargetError unless `url` is on 127.0.0.0/8, ::1 or localhost."""
    if not is_loopback(url):
        raise RemoteTargetError(
            f"refusing to send load to {what} {url!r}: archkit loadtest only targets loopback "
            "addresses (127.0.0.0/8, ::1, localhost); start the service locally or tunnel it "
            "to 127.0.0.1"
        )


def is_loopback_address(address: Any) -> bool:
    """A socket address (as connect() takes it) on loopback: 127.0.0.0/8, ::1, ::ffff:127.x, localhost.

    Non-IP addresses (AF_UNIX paths) never leave the machine and pass; a host name other than
    localhost does not (connect() would resolve it).
    """
    if not isinstance(address, tuple):
        return True
    host = str(address[0]).split("%", 1)[0]
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))
