"""The control-flow section: decisions, calls with retries and circuit breakers, terminals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal

from pydantic import Field

from archkit.spec.base import Fraction, Id, Ms, Node, Seconds
from archkit.spec.refs import IdOf, RefTo

__all__ = ["Branch", "Call", "CircuitBreaker", "Controlflow", "Decision", "Retry", "Terminal"]


class Branch(Node):
    when: str = Field(description="the branch condition's outcome, e.g. 'yes', 'fresh'")
    next: Annotated[Id, RefTo("control-flow node")]


class Decision(Node):
    """A diamond: criterion, where its data comes from, branches and the failure path."""

    id: Annotated[Id, IdOf("control-flow node")]
    label: str | None = None
    criterion: str | None = Field(None, description="e.g. 'feature age < 300s'")
    source: str | None = Field(None, description="where the data for the decision comes from")
    timeout_ms: Ms | None = None
    branches: list[Branch] = Field(default_factory=list)
    on_failure: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="node taken when the decision cannot be made"
    )


class Retry(Node):
    attempts: Annotated[int, Field(ge=0, le=100)] = Field(description="retries after the first try")
    backoff_ms: Ms = 0.0
    backoff_multiplier: Annotated[float, Field(ge=1, le=10)] = Field(
        1.0, description="at most 10 (gRPC's default is 1.6, most clients double)"
    )
    jitter: bool = False


class CircuitBreaker(Node):
    error_rate_threshold: Fraction = 0.5
    window_s: Seconds = 10.0
    open_s: Seconds = 30.0
    min_requests: Annotated[int, Field(ge=1, le=1_000_000)] = 20


class Call(Node):
    """A call to a stage or service with its timeout, retries, breaker and fallback."""

    id: Annotated[Id, IdOf("control-flow node", also=("call",))]
    label: str | None = None
    target: Annotated[Id, RefTo("stage", "service")] = Field(
        description="a dataflow stage id or a topology service id"
    )
    timeout_ms: Ms | None = None
    retry: Retry | None = None
    circuit_breaker: CircuitBreaker | None = None
    caller: Annotated[Id, RefTo("call")] | None = Field(
        None, description="the call whose target makes this call (nesting)"
    )
    next: Annotated[Id, RefTo("control-flow node")] | None = None
    on_failure: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="fallback node on error or timeout"
    )
    idempotent: bool = True


class Terminal(Node):
    """Where a request ends."""

    id: Annotated[Id, IdOf("control-flow node")]
    label: str | None = None
    outcome: Literal["success", "degraded", "rejected", "error"] = "success"
    status: Annotated[int, Field(ge=0, le=999)] | None = Field(
        None, description="protocol status returned, e.g. 200, 429 (HTTP) or 14 (gRPC)"
    )


class Controlflow(Node):
    """Who decides what, when: decisions, calls and terminals."""

    start: Annotated[Id, RefTo("control-flow node")] | None = None
    timeout_ms: Ms | None = Field(None, description="overall request deadline")
    decisions: list[Decision] = Field(default_factory=list)
    calls: list[Call] = Field(default_factory=list)
    terminals: list[Terminal] = Field(default_factory=list)

    def nodes(self) -> Iterator[Decision | Call | Terminal]:
        yield from self.decisions
        yield from self.calls
        yield from self.terminals
