"""AK511: a stage that captures biometric data declares no separate consent."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

# PIPL art. 28 names biometric data as sensitive personal information; art. 29 requires separate
# consent to process it (seed 000 §2.4: "face capture needs separate, explicit consent").
BIOMETRIC = {"biometric", "face"}


@register
class BiometricWithoutConsent(Rule):
    """Where biometric data enters the pipeline, the stage declares no separate consent (PIPL)."""

    code = "AK511"
    name = "biometric-without-consent"
    source = "seed 000 §2.4 (PIPL: face capture needs separate, explicit consent)"
    rationale = """
Seed 000 §2.4: under China's Personal Information Protection Law face capture needs the
person's separate, explicit consent (PIPL art. 29 for sensitive personal information, which
art. 28 says includes biometric data); GDPR art. 9 likewise needs explicit consent for
biometric data. A stage whose `data_classes` name `biometric` or `face` and that receives no
edge from another such stage is where that data enters the pipeline: it must declare
`consent` with `separate: true`. Consent bundled into general terms (`separate: false`) is
reported too.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        df = ctx.spec.dataflow
        bio = {s.id for s in df.stages if {c.lower() for c in s.data_classes} & BIOMETRIC}
        fed = {e.to for e in df.edges if e.from_ in bio}
        for st in df.stages:
            if st.id not in bio or st.id in fed:
                continue
            if st.consent is None:
                yield ctx.at(
                    st,
                    "data_classes",
                    f"stage '{st.id}' captures biometric data with no consent declared: PIPL art. 29 needs "
                    "separate consent (seed 000 §2.4)",
                )
            elif not st.consent.separate:
                yield ctx.at(
                    st.consent,
                    "separate",
                    f"stage '{st.id}' captures biometric data under bundled consent: PIPL art. 29 needs it "
                    "asked for separately (seed 000 §2.4)",
                )
