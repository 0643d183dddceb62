"""AK505: a public ingress rule requires no authentication."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

WORLD = {"0.0.0.0/0", "::/0", "public", "*"}


@register
class PublicIngressWithoutAuth(Rule):
    """An ingress rule open to the public has `auth: none`."""

    code = "AK505"
    name = "public-ingress-without-auth"
    source = "seed 000 §2.4 (every request carries a JWT with the user's authorised scope)"
    rationale = """
Anything reachable from the internet must authenticate callers: JWT with scopes, mTLS,
OAuth2 or at least API keys. An anonymous inference endpoint is an open GPU and an open
door to whatever data the model can see.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            for rule in svc.ingress:
                if rule.from_.strip() in WORLD and rule.auth == "none":
                    field = "auth" if "auth" in rule.model_fields_set else "from"
                    yield ctx.at(
                        rule, field, f"service '{svc.id}' accepts {rule.from_} traffic without authentication"
                    )
