"""AK514: the keys of encrypted sensitive data sit with the data, or nobody says who holds them."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.common import is_sensitive
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

# Custodians that keep the key where the data's reader can reach it (spec.keys.KeyCustody.kind).
_NEXT_TO_DATA = {"application", "file", "none"}


@register
class KeyCustodyOfSensitiveData(Rule):
    """Sensitive data encrypted at rest keeps its key in the application or a file, or names no custody."""

    code = "AK514"
    name = "key-custody"
    source = (
        "seed 000 §2.4 (face vectors encrypted with SM4 at once, keys held by a KMS); seed 004 §4.3 (AWS KMS)"
    )
    rationale = """
Seed 000 §2.4 puts the custodian of the key into the architecture: vectors are encrypted with
SM4 as they are created and the key is held by a KMS. Seed 004 §4.3 names the KMS too (AWS
KMS, for training data, rotated at most every 90 days). Encryption at rest protects data only from
someone who cannot reach the key. A key in the application's configuration or in a file on the
same host or volume is read by whoever reads the data, so `kind: application`, `file` or
`none` is an error. A design that encrypts biometric or personal data and does not say who
holds the key leaves the reviewer unable to judge the encryption at all: a warning, since the
key may well be in a KMS that nobody wrote down. A KMS or HSM with no `service` named is a
warning too: the seed names the custodian, and rotation (AK507, AK508) is configured there.
Declare `key_custody: {kind: kms, service: ...}` on the stage's encryption or once in
`policies.security`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        sec = ctx.spec.policies.security
        default = sec.key_custody if sec is not None else None
        for st in ctx.spec.dataflow.stages:
            enc = st.encryption
            classes = sorted(is_sensitive(st.data_classes))
            if not classes or enc is None or not enc.at_rest:
                continue
            what = " and ".join(classes)
            custody = enc.key_custody or default
            if custody is None:
                yield ctx.at(
                    enc,
                    "at_rest",
                    f"stage '{st.id}' encrypts {what} data at rest and names no key custody",
                    severity=Severity.WARNING,
                    hint="set key_custody: {kind: kms, service: <the KMS>} here or in policies.security",
                )
            elif custody.kind in _NEXT_TO_DATA:
                held = "no managed key" if custody.kind == "none" else f"the key held by '{custody.kind}'"
                yield ctx.at(
                    custody,
                    "kind",
                    f"stage '{st.id}' encrypts {what} data at rest with {held}: "
                    "whoever reads the data can read the key",
                    hint="hold the key in a KMS or HSM (seed 000 §2.4)",
                )
            elif not custody.service:
                yield ctx.at(
                    custody,
                    "kind",
                    f"stage '{st.id}' keeps its key in a {custody.kind} that is not named",
                    severity=Severity.WARNING,
                    hint="name it: key_custody.service, e.g. aliyun-kms, aws-kms, vault-transit",
                )
