"""The built-in verify sources run on inputs already read (a cluster state, server URLs), for tests."""

from __future__ import annotations

from typing import Any

from archkit.spec import Spec
from archkit.verify import ClusterState, VerifyReport, run_inputs


def run(
    spec: Spec,
    state: ClusterState | None = None,
    triton_url: str | None = None,
    prometheus_url: str | None = None,
    expected_groups: list[str] | None = None,
    groups_note: str = "",
    timeout_s: float = 10.0,
) -> VerifyReport:
    """`archkit.verify.run_inputs` with each built-in source's input named."""
    inputs: dict[str, Any] = {}
    if state is not None:
        inputs["kube"] = state
    if triton_url:
        inputs["triton"] = triton_url
    if prometheus_url:
        inputs["prometheus"] = (prometheus_url, expected_groups, groups_note)
    return run_inputs(spec, inputs, timeout_s)
