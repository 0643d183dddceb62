"""AK507: encryption keys rotate less often than every 90 days."""

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic


@register
class KeyRotationTooLong(Rule):
    """A KMS key rotation period is over 90 days."""

    code = "AK507"
    name = "key-rotation-too-long"
    source = "seed 004 §4.3 (training data encrypted with KMS, rotation ≤ 90 days); seed 000 §2.4"
    rationale = """
Seed 004 requires KMS key rotation at most every 90 days for encrypted data. Seed 000 §2.4
adds why the policy belongs on the diagram: a release that forgot the rotation policy made
old face vectors undecryptable and every comparison returned False.
"""

    class Settings(RuleSettings):
        max_days: int = Field(90, ge=1, description="longest KMS key rotation period (seed 004 §4.3: 90)")

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        max_days = ctx.settings(self.Settings).max_days
        spec = ctx.spec
        for st in spec.dataflow.stages:
            enc = st.encryption
            if enc and enc.kms_key_rotation_days and enc.kms_key_rotation_days > max_days:
                yield ctx.at(
                    enc,
                    "kms_key_rotation_days",
                    f"stage '{st.id}' rotates keys every {enc.kms_key_rotation_days} days (> {max_days})",
                )
        sec = spec.policies.security
        if sec and sec.kms_key_rotation_days and sec.kms_key_rotation_days > max_days:
            yield ctx.at(
                sec,
                "kms_key_rotation_days",
                f"keys rotate every {sec.kms_key_rotation_days} days (> {max_days})",
            )
