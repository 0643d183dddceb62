"""AK513: a public JWT/OAuth2 ingress to a service handling personal data names no scopes."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.ak505_public_ingress_without_auth import WORLD
from archkit.checks.common import is_sensitive
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class TokenWithoutScopes(Rule):
    """A public ingress authenticated by JWT or OAuth2 into a service with sensitive stages declares no scopes."""

    code = "AK513"
    name = "token-without-scopes"
    severity = Severity.WARNING
    source = "seed 000 §2.4 (every request carries a JWT with the user's authorised scope: 'compare against own records only')"
    rationale = """
Seed 000 §2.4's face comparison service runs inside the VPC and every request carries a JWT
whose claims hold the user's authorised scope ("may compare against their own records
only"). A token that only proves who is calling lets any signed-in user reach everyone's
biometric or personal data. A public ingress rule with `auth: jwt` or `oauth2` into a
service whose stages hold sensitive data (`data_classes` such as biometric, face, pii) must
name the `scopes` a token needs (AK505 already requires authentication itself).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for svc in spec.topology.services:
            classes: set[str] = set()
            for st in spec.dataflow.stages:
                if st.service == svc.id:
                    classes |= is_sensitive(st.data_classes)
            if not classes:
                continue
            for rule in svc.ingress:
                if rule.from_.strip() in WORLD and rule.auth in ("jwt", "oauth2") and not rule.scopes:
                    yield ctx.at(
                        rule,
                        "auth",
                        f"service '{svc.id}' handles {', '.join(sorted(classes))} data and accepts any valid "
                        f"{rule.auth} token from {rule.from_}: name the scopes a token must carry (seed 000 §2.4)",
                    )
