"""AK502: biometric data, or unlabelled personal data, leaves the trust boundary."""

from collections.abc import Iterator

from archkit.checks.common import SPECIAL_CATEGORY, is_sensitive, stages_by_service
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class SensitiveDataEgress(Rule):
    """Biometric data has egress, or personal data egresses without a compliance basis."""

    code = "AK502"
    name = "sensitive-data-egress"
    source = "seed 000 §2.4 (face vectors must not cross domains; the feature DB has no outbound access)"
    rationale = """
GDPR Art. 9 data (face vectors, fingerprints) may not leave its domain: the stage that holds
it has no egress and its service's network policy allows only in-cluster destinations.
Personal data may leave only with a documented legal basis — a compliance tag on the
stage (e.g. 'PIPL Sec.28' for the public-security registry check in seed 004 §2.1).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            classes = is_sensitive(st.data_classes)
            if not st.egress or not classes:
                continue
            if classes & SPECIAL_CATEGORY:
                yield ctx.at(
                    st,
                    "egress",
                    f"stage '{st.id}' sends {'/'.join(sorted(classes & SPECIAL_CATEGORY))} "
                    f"data out of the trust boundary",
                )
            elif not st.compliance:
                yield ctx.at(
                    st, "egress", f"stage '{st.id}' sends personal data out without a compliance tag"
                )
        by_svc = stages_by_service(ctx)
        for svc in spec.topology.services:
            special = [
                s.id for s in by_svc.get(svc.id, []) if is_sensitive(s.data_classes) & SPECIAL_CATEGORY
            ]
            if not special:
                continue
            for rule in svc.egress:
                if not rule.to.startswith("service:") and not _private(rule.to):
                    yield ctx.at(
                        rule,
                        "to",
                        f"service '{svc.id}' handles biometric data ({', '.join(special)}) "
                        f"but may connect to '{rule.to}'",
                    )


def _private(dest: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_network(dest, strict=False).is_private
    except ValueError:
        return dest.endswith((".svc", ".svc.cluster.local", ".internal", ".local"))
