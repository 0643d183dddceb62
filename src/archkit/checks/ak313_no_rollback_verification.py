"""AK313: a model has no rollback verification set."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.engines import adapter

# The seed's check: version 1 of the model is loaded (Triton's KServe v2 path).
_VERSION_READY = (adapter("triton").endpoints.model_version_metadata or "").format(model="{model}", version=1)


@register
class NoRollbackVerification(Rule):
    """A model stage declares no rollback golden set to prove a rollback worked."""

    code = "AK313"
    name = "no-rollback-verification"
    severity = Severity.WARNING
    source = "seed 000 §5.12 (after a rollback: check the version loads, then run the golden dataset)"
    rationale = f"""
"One-click rollback" is only real when it is verified: the seed checks that the old version
loaded (`{_VERSION_READY}`) and runs a stored golden dataset through it
(`verify_model.py --model v1`). Declare `rollback: {{golden_set: ..., command: ...}}`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None:
                continue
            if m.rollback is None or not m.rollback.golden_set:
                obj, field = (m.rollback, "golden_set") if m.rollback else (m, "name")
                yield ctx.at(obj, field, f"model '{m.name}' of stage '{st.id}' has no rollback golden set")
