"""The `chaosmesh` generator: the chaos level's faults as Chaos Mesh experiments (seed 000 §4.4).

Seed 000 §4.4 proves resilience with Chaos Mesh. Each fault of a chaos level becomes one
experiment against the pods of the service it targets (selected by the labels the `kubernetes`
generator gives them): kill -> PodChaos pod-kill (pod-failure when it lasts `duration_s`), restart
-> PodChaos container-kill, stop and pause -> PodChaos pod-failure for the fault's duration,
delay -> NetworkChaos delay of `delay_ms`, loss -> NetworkChaos loss of `loss_percent`, stress ->
StressChaos with `stress_cpu_workers` and `stress_memory_mib` (loss and stress exist only here: the
local runner cannot inject them).
`archkit loadtest --level chaos` stays the runnable default on one machine (local processes and
a delay proxy); these files are for a cluster, applied at each fault's `at_s` (an annotation).
"""

from __future__ import annotations

from typing import Any

from archkit.generators.gen_kubernetes import dns_label, dump_documents, names
from archkit.generators.registry import RenderContext, register
from archkit.spec.model import Fault, Level, Spec

API = "chaos-mesh.org/v1alpha1"


def _seconds(value: float) -> str:
    return f"{max(1, round(value))}s"


def experiment(spec: Spec, level: Level, index: int, fault: Fault) -> dict[str, Any] | None:
    """One Chaos Mesh object for one fault; None when the target is not a deployed service."""
    svc = spec.service(fault.target)
    if svc is None or svc.external:
        return None
    _, ns, container, labels = names(spec, svc)
    length = fault.duration_s if fault.duration_s is not None else max(level.duration_s - fault.at_s, 1)
    selector = {"namespaces": [ns], "labelSelectors": dict(labels)}
    body: dict[str, Any]
    if fault.action in ("delay", "loss"):
        kind = "NetworkChaos"
        body = {"action": fault.action, "mode": "all", "selector": selector}
        if fault.action == "delay":
            body["delay"] = {"latency": f"{fault.delay_ms or 0:g}ms"}
        else:
            body["loss"] = {"loss": f"{fault.loss_percent or 0:g}"}
        body["direction"] = "to"
        body["duration"] = _seconds(length)
    elif fault.action == "stress":
        kind = "StressChaos"
        stressors: dict[str, Any] = {}
        if fault.stress_cpu_workers:
            stressors["cpu"] = {"workers": fault.stress_cpu_workers, "load": 100}
        if fault.stress_memory_mib:
            stressors["memory"] = {"workers": 1, "size": f"{round(fault.stress_memory_mib)}MiB"}
        body = {
            "mode": "all",
            "selector": selector,
            "containerNames": [container],
            "stressors": stressors,
            "duration": _seconds(length),
        }
    else:
        kind = "PodChaos"
        # a kill with a duration keeps the service down that long: pod-failure, not a pod-kill that
        # Kubernetes answers with a new pod at once
        action = {"kill": "pod-kill", "restart": "container-kill"}.get(fault.action, "pod-failure")
        if fault.action == "kill" and fault.duration_s:
            action = "pod-failure"
        body = {"action": action, "mode": "all", "selector": selector}
        if action == "container-kill":
            body["containerNames"] = [container]
        if action == "pod-failure":
            body["duration"] = _seconds(length)
    name = dns_label(f"{spec.metadata.name}-{level.id}-{index}-{fault.action}-{fault.target}")
    annotations = {"archkit.io/level": level.id, "archkit.io/at-s": f"{fault.at_s:g}"}
    if fault.expect_fallback:
        annotations["archkit.io/expect-fallback"] = fault.expect_fallback
    return {
        "apiVersion": API,
        "kind": kind,
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": body,
    }


@register(
    "chaosmesh",
    order=69,
    source="seed 000 §4.4 (chaos: killed pods and injected latency exercise the degradation paths)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Chaos Mesh experiments (PodChaos, NetworkChaos, StressChaos) for each chaos level's faults."""
    lt = ctx.spec.loadtest
    out: dict[str, str] = {}
    for level in lt.levels if lt else []:
        docs = [d for i, f in enumerate(level.faults) if (d := experiment(ctx.spec, level, i, f)) is not None]
        if docs:
            where = f"loadtest.levels[{level.spec_path[-1]}]" if level.spec_path else "loadtest"
            head = f"{ctx.header('#')}\n# level '{level.id}' ({where}): apply each at its archkit.io/at-s\n"
            out[f"chaos-mesh/{dns_label(level.id)}.yaml"] = head + dump_documents(docs)
    return out
