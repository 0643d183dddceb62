"""`archkit verify`: hold a cluster, Triton and Prometheus to the spec, read-only."""

from __future__ import annotations

from archkit.spec import Spec, file_of
from archkit.verify.findings import CODES, Finding, Status, VerifyReport, to_json, to_junit, to_text
from archkit.verify.state import (
    ClusterState,
    StateError,
    load_manifests,
    load_snapshot,
    rbac_clusterrole,
    read_live,
)

__all__ = [
    "CODES",
    "ClusterState",
    "Finding",
    "StateError",
    "Status",
    "VerifyReport",
    "load_manifests",
    "load_snapshot",
    "rbac_clusterrole",
    "read_live",
    "run",
    "to_json",
    "to_junit",
    "to_text",
]


def run(
    spec: Spec,
    state: ClusterState | None = None,
    triton_url: str | None = None,
    prometheus_url: str | None = None,
    expected_groups: list[str] | None = None,
    groups_note: str = "",
    timeout_s: float = 10.0,
) -> VerifyReport:
    """Run the checks of every source given; the report lists what was read and every finding."""
    report = VerifyReport(file_of(spec))
    if state is not None:
        from archkit.verify.kube import check_cluster

        report.sources.append(
            {
                "area": "kube",
                "source": state.source,
                "mode": state.mode,
                "api_calls": state.api_calls,
                "kinds": {
                    k: {"status": r.status, "message": r.message, "calls": r.calls}
                    for k, r in sorted(state.reads.items())
                },
            }
        )
        report.api_calls += state.api_calls
        report.findings += check_cluster(spec, state)
    if triton_url:
        from archkit.verify.triton import check_triton

        report.sources.append({"area": "triton", "source": triton_url})
        report.findings += check_triton(spec, triton_url, timeout_s)
    if prometheus_url:
        from archkit.verify.prometheus import check_prometheus

        report.sources.append({"area": "prometheus", "source": prometheus_url})
        report.findings += check_prometheus(spec, prometheus_url, expected_groups, groups_note, timeout_s)
    return report
