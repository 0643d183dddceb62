"""AK501: personal or biometric data moves or rests unencrypted."""

from collections.abc import Iterator

from archkit.checks.common import is_sensitive
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

STORES = {"store", "cache", "queue"}


@register
class SensitiveDataUnencrypted(Rule):
    """A stage or storage holding personal/biometric data lacks encryption in transit or at rest."""

    code = "AK501"
    name = "sensitive-data-unencrypted"
    source = "seed 000 §2.4 (face vectors encrypted with SM4 at once, keys in KMS; GDPR Art. 9, PIPL)"
    rationale = """
Biometric data (GDPR Art. 9 special category) and personal data (PIPL) must be encrypted on
every hop (`encryption.in_transit`) and wherever they rest: store, cache and queue stages
(`encryption.at_rest`) and storage volumes (`encrypted: true`).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            classes = is_sensitive(st.data_classes)
            if not classes:
                continue
            enc = st.encryption
            what = "/".join(sorted(classes))
            need_rest = st.kind.value in STORES
            missing = []
            if not (enc and enc.in_transit):
                missing.append("in transit")
            if need_rest and not (enc and enc.at_rest):
                missing.append("at rest")
            if missing:
                yield ctx.at(
                    st,
                    "encryption" if enc else "data_classes",
                    f"stage '{st.id}' handles {what} data unencrypted {' and '.join(missing)}",
                )
        for sto in spec.topology.storage:
            classes = is_sensitive(sto.data_classes)
            if classes and not sto.encrypted:
                yield ctx.at(
                    sto,
                    "data_classes",
                    f"storage '{sto.id}' holds {'/'.join(sorted(classes))} data unencrypted",
                )
