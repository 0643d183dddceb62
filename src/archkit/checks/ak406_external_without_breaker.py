"""AK406: a call to an external dependency has no circuit breaker."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import StageKind


@register
class ExternalWithoutBreaker(Rule):
    """A call to an external stage or third-party service has no circuit breaker."""

    code = "AK406"
    name = "external-without-breaker"
    source = "seed 000 §3.2 (Hystrix circuit on the feature service); seed 004 §2.1 (public-security registry, 800 ms)"
    rationale = """
A dependency we do not run fails on its own schedule. Without a breaker every request pays
the full timeout while it is down, threads pile up and the outage spreads upstream. A
breaker (error-rate threshold over a window, open for a while) fails fast to the fallback.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for c in spec.controlflow.calls:
            st = spec.stage(c.target)
            svc = spec.service(c.target)
            runs_on = spec.service(st.service) if st is not None and st.service else None
            external = (
                st is not None
                and (st.kind is StageKind.external or (runs_on is not None and runs_on.external))
            ) or (svc is not None and svc.external)
            if external and c.circuit_breaker is None:
                yield ctx.at(c, "target", f"call '{c.id}' to external '{c.target}' has no circuit_breaker")
