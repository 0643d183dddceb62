"""AK327: a service's startup (or liveness) probe gives up before its models finish their cold start."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Probe, Service, Spec


def probe_window_s(probe: Probe) -> float:
    """Seconds from container start until the kubelet kills the container for this probe failing.

    Kubernetes (Configure Liveness, Readiness and Startup Probes): the probe first runs after
    `initialDelaySeconds` and the container is restarted after `failureThreshold` consecutive
    failures `periodSeconds` apart.
    """
    return probe.initial_delay_s + probe.period_s * probe.failure_threshold


def cold_start_ms(spec: Spec, svc: Service) -> tuple[float, str] | None:
    """The longest declared cold start of the models `svc` serves, and the stage it belongs to."""
    worst: tuple[float, str] | None = None
    for st in spec.dataflow.stages:
        m = st.model
        if st.service != svc.id or m is None or m.cold_start_ms is None:
            continue
        if worst is None or m.cold_start_ms > worst[0]:
            worst = (m.cold_start_ms, st.id)
    return worst


@register
class ProbeKillsColdStart(Rule):
    """A model service's startup probe (or, without one, its liveness probe) fails before its cold start ends."""

    code = "AK327"
    name = "probe-kills-cold-start"
    severity = Severity.ERROR
    source = "seed 004 §3.4 (cold start: model load to first answer, warm-up over 800 ms)"
    rationale = """
Seed 004 §3.4 measures a model's cold start, the time from loading it to its first answer.
Kubernetes restarts a container whose startup probe has failed `failure_threshold` times
`period_s` apart after `initial_delay_s`; without a startup probe the liveness probe does
the same from the container's start. When that window is shorter than the model's
`cold_start_ms`, every new pod is killed while it is still loading, restarted, and killed
again (CrashLoopBackOff): a scale-out or a rollback never adds capacity. Give the service a
startup probe whose window covers the cold start (Kubernetes' own advice for slow-starting
containers), or a liveness `initial_delay_s` beyond it. Readiness probes do not restart a
container and are not counted.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            worst = cold_start_ms(ctx.spec, svc)
            if worst is None:
                continue
            kind = "startup" if svc.probes.startup is not None else "liveness"
            probe = svc.probes.startup or svc.probes.liveness
            if probe is None:
                continue
            window = probe_window_s(probe)
            if window * 1000 >= worst[0]:
                continue
            yield ctx.at(
                probe,
                None,
                f"service '{svc.id}' {kind} probe gives up after {window:g} s "
                f"(initial_delay_s {probe.initial_delay_s:g} + {probe.failure_threshold} × period_s "
                f"{probe.period_s:g}) but stage '{worst[1]}' cold start is {worst[0] / 1000:g} s: "
                "every new pod is killed while its model loads",
            )
