"""AK503: personal or biometric data without a compliance tag."""

from collections.abc import Iterator

from archkit.checks.common import SPECIAL_CATEGORY, is_sensitive
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class SensitiveDataUntagged(Rule):
    """A stage handles personal/biometric data without a compliance tag (biometric: GDPR Art.9 or PIPL)."""

    code = "AK503"
    name = "sensitive-data-untagged"
    source = "seed 000 §2.4 (every data node is tagged [GDPR Art.9] or [PIPL Sec.28] and signed off by legal)"
    rationale = """
The seed added a "compliance checkpoint" layer to its diagrams: each node that touches
personal data names the regulation it falls under, and legal signs it at every review.
Biometric data needs a GDPR Art. 9 or PIPL tag specifically (separate consent, encryption,
no cross-border transfer).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            classes = is_sensitive(st.data_classes)
            if not classes:
                continue
            tags = " ".join(st.compliance).lower().replace(" ", "")
            if not st.compliance:
                yield ctx.at(
                    st,
                    "data_classes",
                    f"stage '{st.id}' handles {'/'.join(sorted(classes))} data without a compliance tag",
                )
            elif classes & SPECIAL_CATEGORY and not (
                "gdprart.9" in tags or "gdprart9" in tags or "pipl" in tags
            ):
                yield ctx.at(
                    st,
                    "compliance",
                    f"stage '{st.id}' handles biometric data but is tagged {', '.join(st.compliance)} "
                    f"(needs GDPR Art.9 or PIPL)",
                )
