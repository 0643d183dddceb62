"""AK410: a model's confidence breaker reads an output the model does not return, or falls back to nothing usable."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import StageKind


@register
class ConfidenceBreakerBroken(Rule):
    """A confidence breaker's output is not in the model's contract, or its fallback is not another model stage."""

    code = "AK410"
    name = "confidence-breaker-broken"
    source = (
        "seed 004 §3.2 (mean confidence below 0.7 moves traffic to a backup model); seed 004 §1 "
        "(confidence_score renamed pred_confidence broke its readers)"
    )
    rationale = """
Seed 004 §3.2's gateway switches a model's traffic to a backup (ResNet for ViT) when the mean
confidence of its answers falls below 0.7. The breaker reads one output field, and seed 004
§1's model update renamed exactly such a field (`confidence_score` to `pred_confidence`): a
breaker reading a field the model no longer returns never trips. When the model declares its
`contract.outputs`, the breaker's `output` must be one of them. The fallback must be another
stage that serves a model (`kind: model` or `llm`) with a different model, or human review
(`kind: human`: seed 004 §2.2 sends ID numbers read below 0.92 confidence to a reviewer):
falling back to the same stage, or to a model of the same name, sends traffic back to what
tripped the breaker.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            m = st.model
            br = m.confidence_breaker if m is not None else None
            if m is None or br is None:
                continue
            outputs = [o.name for o in m.contract.outputs] if m.contract is not None else []
            if outputs and br.output not in outputs:
                yield ctx.at(
                    br,
                    "output",
                    f"stage '{st.id}' confidence breaker reads '{br.output}', which model '{m.name}' does not "
                    f"return (contract.outputs: {', '.join(outputs)}): it never trips",
                )
            fb = spec.stage(br.fallback)
            if fb is None:
                continue  # AK103 reports the dangling reference
            why = None
            if fb.id == st.id:
                why = "is the stage itself"
            elif fb.kind == StageKind.human:
                why = None  # seed 004 §2.2: low confidence forces human review
            elif fb.kind not in (StageKind.model, StageKind.llm) or (fb.model is None and fb.llm is None):
                why = f"is a '{fb.kind.value}' stage, not a model or human review"
            elif fb.model is not None and fb.model.name == m.name:
                why = f"serves the same model '{m.name}'"
            if why:
                yield ctx.at(
                    br,
                    "fallback",
                    f"stage '{st.id}' confidence breaker falls back to '{fb.id}', which {why}: "
                    "tripped traffic has no backup model",
                )
