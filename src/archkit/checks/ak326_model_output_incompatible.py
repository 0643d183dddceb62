"""AK326: a model version drops or retypes an output field of the version it replaces."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model_contract import major


@register
class ModelOutputIncompatible(Rule):
    """A new model version drops or retypes an output its predecessor returned, with no major bump and no adapter."""

    code = "AK326"
    name = "model-output-incompatible"
    source = "seed 004 §1 (a model update renamed confidence_score to pred_confidence and broke the callers)"
    rationale = """
Seed 004 §1 asks, before the first line of code, how a model switch keeps the new and old
outputs format-compatible: its downstream business systems failed when an update renamed
`confidence_score` to `pred_confidence`, a field no interface document had fixed. With
`model.contract` a model declares the fields it returns and those of the version it replaces
(`replaces`). A field dropped (a rename drops the old name) or given another type breaks every
consumer built against the old version, unless the version's major number says so (1.x -> 2.0,
consumers pin the major) or an `adapter` still serves the old shape. A contract that names the
version it replaces but not its own outputs cannot be compared and is reported too.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            m = st.model
            c = m.contract if m is not None else None
            if m is None or c is None or c.replaces is None:
                continue
            old = c.replaces
            if not c.outputs:
                yield ctx.at(
                    c,
                    "replaces",
                    f"model '{m.name}' replaces {old.version} but declares none of its own outputs: "
                    "the two cannot be compared",
                )
                continue
            if old.adapter:
                continue
            new_major, old_major = major(m.version), major(old.version)
            if new_major is not None and old_major is not None and new_major > old_major:
                continue
            now = {f.name: f for f in c.outputs}
            broken = []
            for f in old.outputs:
                if f.name not in now:
                    broken.append(f"drops '{f.name}'")
                elif f.type and now[f.name].type and f.type != now[f.name].type:
                    broken.append(f"retypes '{f.name}' from {f.type} to {now[f.name].type}")
            if not broken:
                continue
            readers = sorted({e.to for e in spec.dataflow.edges if e.from_ == st.id})
            who = f" (read by {', '.join(repr(r) for r in readers)})" if readers else ""
            yield ctx.at(
                c,
                "outputs",
                f"model '{m.name}' {m.version or '(no version)'} breaks the outputs {old.version} returned{who}: "
                f"{'; '.join(broken)}; no major version bump and no adapter",
            )
