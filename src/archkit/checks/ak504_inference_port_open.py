"""AK504: an inference service accepts connections from anywhere."""

from collections.abc import Iterator

from archkit.checks.common import stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

WORLD = {"0.0.0.0/0", "::/0", "public", "*"}


@register
class InferencePortOpen(Rule):
    """A service that runs a model accepts traffic from 0.0.0.0/0 or the public internet."""

    code = "AK504"
    name = "inference-port-open"
    source = "seed 000 §5.11 (a Triton NodePort exposed to the internet: the GPUs were hijacked by a miner)"
    rationale = """
Model servers (Triton, TF Serving) are not hardened front doors: their HTTP/gRPC ports load
models, expose metadata and burn GPU time. Only the gateway is public; the security group
of an inference service admits its callers' CIDR (seed: 8000/tcp from 10.10.0.0/16).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        by_svc = stages_by_service(ctx)
        for svc in ctx.spec.topology.services:
            models = [s.id for s in by_svc.get(svc.id, []) if s.model is not None]
            if not models:
                continue
            for rule in svc.ingress:
                if rule.from_.strip() in WORLD:
                    yield ctx.at(
                        rule,
                        "from",
                        f"inference service '{svc.id}' ({', '.join(models)}) accepts "
                        f"connections from {rule.from_}",
                    )
