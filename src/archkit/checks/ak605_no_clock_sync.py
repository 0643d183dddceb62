"""AK605: latencies are compared across hosts whose clocks are not required to be in sync."""

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity


@register
class NoClockSync(Rule):
    """Stages run on more than one service but no clock-sync requirement (NTP, drift ≤ 10 ms) is declared."""

    code = "AK605"
    name = "no-clock-sync"
    severity = Severity.WARNING
    source = "seed 000 §5.3 (an 800 ms NTP drift made a new model look 15 ms slower; write 'NTP sync: enabled, drift < 10ms')"
    rationale = """
Per-stage latencies measured on different hosts are compared and subtracted (seed 000 §2.1
subtracts GPU, network and end-to-end times). Without synchronised clocks those numbers are
fiction. Declare `observability.clock_sync: true` (or `topology.os_tuning.ntp: true`) and a
maximum drift of at most 10 ms.
"""

    class Settings(RuleSettings):
        max_drift_ms: float = Field(
            10, gt=0, description="largest clock drift allowed (seed 000 §5.3: 10 ms)"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        max_drift_ms = ctx.settings(self.Settings).max_drift_ms
        spec = ctx.spec
        services = {s.service for s in spec.dataflow.stages if s.service}
        if len(services) < 2:
            return
        obs, tun = spec.observability, spec.topology.os_tuning
        synced = obs.clock_sync or (tun is not None and tun.ntp)
        if not synced:
            yield ctx.at(
                obs,
                "clock_sync" if obs.clock_sync is not None else "stages",
                f"stages run on {len(services)} services but clock sync is not required",
            )
            return
        for obj in (o for o in (obs, tun) if o is not None):
            drift = getattr(obj, "max_clock_drift_ms", None)
            if drift is not None and drift > max_drift_ms:
                yield ctx.at(
                    obj, "max_clock_drift_ms", f"allowed clock drift {drift:g} ms > {max_drift_ms:g} ms"
                )
