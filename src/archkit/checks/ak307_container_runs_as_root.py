"""AK307: a container may run as root."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class ContainerRunsAsRoot(Rule):
    """A service runs as root (uid 0) or does not declare a non-root user."""

    code = "AK307"
    name = "container-runs-as-root"
    source = "seed 000 §4.1 (Dockerfile ends with `USER aiuser`, uid 1001); seed 000 §5.11"
    rationale = """
A root container that is compromised (seed 000 §5.11: a Triton NodePort exposed to the
internet was taken over by a miner) owns the node's GPU driver and mounts. Declare
`security: {run_as_non_root: true, run_as_user: <uid>}`. Third-party external services are
exempt (we do not deploy them).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            if svc.external:
                continue
            sec = svc.security
            if sec.run_as_user == 0:
                yield ctx.at(sec, "run_as_user", f"service '{svc.id}' runs as uid 0 (root)")
            elif sec.run_as_non_root is not True and sec.run_as_user is None:
                yield ctx.at(
                    svc,
                    "id",
                    f"service '{svc.id}' does not declare a non-root user",
                    hint="security: {run_as_non_root: true, run_as_user: 1001}",
                )
