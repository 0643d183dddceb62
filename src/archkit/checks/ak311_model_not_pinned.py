"""AK311: a model version is not pinned by digest."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class ModelNotPinned(Rule):
    """A model stage has no sha256 digest, or its version is missing or 'latest'."""

    code = "AK311"
    name = "model-not-pinned"
    source = "seed 000 §5.1 (overwriting latest.pt took the service down); seed 000 §2.2; seed 004 §4.1"
    rationale = """
"latest" is whatever was uploaded last. The seeds pin each model version by timestamp or
semantic version and verify its SHA-256 before loading; rollback is then a pointer change
to a known hash (5 s). Declare `version` (not 'latest') and `sha256`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None:
                continue
            if not m.version or m.version.strip().lower() == "latest":
                yield ctx.at(
                    m,
                    "version" if m.version else "name",
                    f"model '{m.name}' of stage '{st.id}' has no pinned version",
                )
            elif not m.sha256:
                yield ctx.at(
                    m, "version", f"model '{m.name}' {m.version} of stage '{st.id}' has no sha256 digest"
                )
