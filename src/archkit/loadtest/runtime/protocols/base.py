"""The base of every load protocol's user, and the registry of protocols by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from locust import User, task

from archkit.errors import ArchkitError

if TYPE_CHECKING:
    from archkit.loadtest.runtime.core import Runtime
    from archkit.loadtest.runtime.mix import Scenario


class ProtocolError(ArchkitError, ValueError):
    """An unknown protocol, or one registered twice."""


class Status:
    """The protocol status of one call, passed to request listeners as `response`."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class ServiceUser(User):  # type: ignore[misc]  # locust is untyped
    """Sends the traffic mix: waits for its pacer's slot, picks a scenario, `send`s it."""

    abstract = True
    runtime: ClassVar[Runtime]  # set on the concrete class the runtime builds

    def wait_time(self) -> float:
        return 0.0  # pacing happens in pacer.acquire, right before each request

    def on_start(self) -> None:
        self.runtime.require_target(self.host or "")
        self.connect()

    @classmethod
    def class_attributes(cls, timeout_s: float) -> dict[str, Any]:
        """Class attributes of the concrete user class (locust reads some before `on_start`)."""
        return {}

    def connect(self) -> None:
        """Per-user set-up (a client, a connection) after the loopback check."""

    @task
    def request(self) -> None:
        self.runtime.pacer.acquire(self)
        sc, body = self.runtime.mix.pick()
        self.send(sc, body)

    def send(self, sc: Scenario, body: bytes) -> None:
        """Send one request of scenario `sc` and report it with locust's request event."""
        raise NotImplementedError


PROTOCOLS: dict[str, type[ServiceUser]] = {}
U = TypeVar("U", bound=type[ServiceUser])


def register_protocol(name: str) -> Callable[[U], U]:
    """Class decorator: the user class of protocol `name`; a second one of that name is an error."""

    def deco(cls: U) -> U:
        have = PROTOCOLS.get(name)
        if have is not None and have.__qualname__ != cls.__qualname__:
            raise ProtocolError(
                f"load protocol {name!r} is registered twice ({have.__name__}, {cls.__name__})"
            )
        PROTOCOLS[name] = cls
        return cls

    return deco


def fire(
    user: Any,
    protocol: str,
    name: str,
    elapsed_ms: float,
    length: int,
    status: int,
    exc: BaseException | None,
    context: dict[str, Any] | None = None,
) -> None:
    """Report one request on locust's request event (what the recorder and locust's stats listen to)."""
    user.environment.events.request.fire(
        request_type=protocol,
        name=name,
        response_time=elapsed_ms,
        response_length=length,
        response=Status(status),
        context=context or {},
        exception=exc,
    )
