"""AK329: a model's rollback cannot take effect within its declared time budget."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class RollbackSlowerThanBudget(Rule):
    """A rollback must reload the old version (one version loaded) and its reload time exceeds `rollback.max_s`."""

    code = "AK329"
    name = "rollback-slower-than-budget"
    severity = Severity.WARNING
    source = (
        "seed 000 §2.2 (rollback repoints model-version.txt, effective in 5 s; latest 2 versions loaded); "
        "seed 004 §4.1 (rollback by one variable, 5 s)"
    )
    rationale = """
Seed 000 §2.2 rolls a model back in 5 s by changing which hash a version file points at,
and seed 004 §4.1 by changing one variable; both work because the old version is still on
hand. With Triton's `version_policy: latest 2` the previous version stays loaded, so a
rollback is a routing change; with one version loaded, the old one must be loaded again,
which takes the model's `reload_ms` (a CUDA context rebuild: 83 ms in seed 000 §2.2) or, when
only that is declared, its `cold_start_ms`. A `rollback.max_s` below that time is a budget the
design cannot meet: keep two versions loaded or raise the budget.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            rb = m.rollback if m is not None else None
            if m is None or rb is None or rb.max_s is None:
                continue
            vp = m.version_policy
            if vp is not None and ((vp.latest_num_versions or 0) >= 2 or len(vp.specific) >= 2):
                continue  # the previous version is still loaded: a rollback is a routing change
            took = m.reload_ms if m.reload_ms is not None else m.cold_start_ms
            what = "reload_ms" if m.reload_ms is not None else "cold_start_ms"
            if took is None or took <= rb.max_s * 1000:
                continue
            yield ctx.at(
                rb,
                "max_s",
                f"model '{m.name}' of stage '{st.id}' keeps one version loaded, so a rollback reloads the old one "
                f"({what} {took / 1000:g} s) and cannot take effect within rollback.max_s {rb.max_s:g} s "
                "(seed 000 §2.2: keep two versions loaded)",
            )
