"""AK312: the model server keeps fewer than two versions loaded."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class VersionPolicyTooFew(Rule):
    """A model's version policy is missing or keeps fewer than two versions."""

    code = "AK312"
    name = "version-policy-too-few"
    severity = Severity.WARNING
    source = (
        "seed 000 §2.2 (version_policy latest { num_versions: 2 }: old version serves in-flight requests)"
    )
    rationale = """
With two versions loaded, a new model takes new requests while long-lived connections finish
on the old one, and rolling back is instant. One version means every update drops in-flight
requests and every rollback is a reload (CUDA context rebuild, seed 000 §2.2).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None:
                continue
            vp = m.version_policy
            if vp is None:
                yield ctx.at(
                    m,
                    "name",
                    f"model '{m.name}' of stage '{st.id}' has no version_policy",
                    hint="version_policy: {latest_num_versions: 2}",
                )
            elif vp.latest_num_versions is not None and vp.latest_num_versions < 2:
                yield ctx.at(
                    vp,
                    "latest_num_versions",
                    f"model '{m.name}' keeps only {vp.latest_num_versions} version loaded",
                )
            elif vp.latest_num_versions is None and len(vp.specific) < 2:
                yield ctx.at(vp, "specific", f"model '{m.name}' pins fewer than two versions")
