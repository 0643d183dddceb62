"""Workflows of the control plane (seed 004 §2.2): orchestration with retries, persisted state and an alert.

Seed 004 §2.2's control plane runs the scenario flow as Temporal workflows: "if OCR fails, retry
three times; when the third retry fails too, raise an alert", and every workflow's state is
persisted in PostgreSQL so that an operator can query "second retry, 12 s of its timeout left".
A workflow names the control-flow calls it runs as its steps (each call's `retry` is the step's
retry policy), where its state is persisted (a storage or service of the topology) and the
counter of steps whose retries ran out; the `prometheus` generator turns that counter into a
`WorkflowRetriesExhausted<Id>` alert, rules AK412 and AK413 ask for the alert and the state.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from archkit.spec.base import Id, Node
from archkit.spec.refs import IdOf, RefTo

__all__ = ["RetriesExhausted", "Workflow", "WorkflowState"]


class WorkflowState(Node):
    """Where a workflow's state (step, attempt, time left) is persisted and how it is read."""

    store: Annotated[Id, RefTo("storage", "service")] = Field(
        description="the storage or service holding it, e.g. the PostgreSQL that Temporal persists to"
    )
    query: str | None = Field(
        None,
        max_length=512,
        description="how an operator reads a workflow's state, e.g. `temporal workflow describe -w <id>`",
    )


class RetriesExhausted(Node):
    """The counter of workflow steps that failed after their last retry."""

    metric: str = Field(
        min_length=1,
        max_length=256,
        description="a counter the workflow increments when a step fails after its last retry, e.g. "
        "loan_workflow_retries_exhausted_total",
    )
    labels: dict[str, str] = Field(default_factory=dict)


class Workflow(Node):
    """A control-plane workflow: the calls it runs, where its state lives, the alert when retries run out."""

    id: Annotated[Id, IdOf("workflow")]
    label: str | None = None
    engine: Literal["temporal", "cadence", "airflow", "argo", "step-functions", "celery", "other"] = (
        "temporal"
    )
    service: Annotated[Id, RefTo("service")] | None = Field(
        None, description="the service its workers run in"
    )
    steps: list[Annotated[Id, RefTo("call")]] = Field(
        min_length=1,
        max_length=1000,
        description="the control-flow calls it runs; each call's `retry` is that step's retry policy",
    )
    state: WorkflowState | None = Field(
        None, description="where its state is persisted (AK413: required once a step retries)"
    )
    retries_exhausted: RetriesExhausted | None = Field(
        None, description="the counter that alerts when a step's retries run out (AK412)"
    )
