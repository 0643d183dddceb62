"""AK508: encrypted sensitive data has no key-rotation policy."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

SENSITIVE = {"biometric", "pii"}


@register
class SensitiveDataWithoutKeyRotation(Rule):
    """A stage encrypts biometric or personal data at rest, and no key rotation is declared."""

    code = "AK508"
    name = "sensitive-data-without-key-rotation"
    source = "seed 000 §2.4 (a release that forgot the rotation policy left old vectors undecryptable); seed 004 §4.3"
    rationale = """
Seed 000 §2.4 encrypts face vectors the moment they are created, with keys held in a KMS;
one release forgot the key-rotation policy, old vectors became undecryptable and every
comparison returned False. Seed 004 §4.3 requires rotation at most every 90 days. AK507
judges a declared period; this rule catches the forgotten one: declare
`kms_key_rotation_days` on the stage's encryption or in `policies.security`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        sec = ctx.spec.policies.security
        if sec is not None and sec.kms_key_rotation_days:
            return
        for st in ctx.spec.dataflow.stages:
            enc = st.encryption
            classes = sorted(SENSITIVE & set(st.data_classes))
            if not classes or enc is None or not enc.at_rest or enc.kms_key_rotation_days:
                continue
            yield ctx.at(
                enc,
                "at_rest",
                f"stage '{st.id}' encrypts {' and '.join(classes)} data at rest with no key-rotation policy",
                hint="set kms_key_rotation_days (at most 90) here or in policies.security",
            )
