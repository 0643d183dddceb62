"""AK216: requests enter the pipeline with no stage capping their size."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import StageKind


@register
class InputSizeUncapped(Rule):
    """The spec has ingress stages but no stage declares `max_input_bytes`."""

    code = "AK216"
    name = "input-size-uncapped"
    severity = Severity.WARNING
    source = "seed 004 §2.1 (a 10 MB scan froze the front end; check size and format first); seed 000 §3.1"
    rationale = """
Seed 004 §2.1's first failure: a user uploaded a 10 MB scan and the front end froze, because
nothing checked the image's size and format before the work began; its loan flow starts
with exactly that check. Seed 000 §3.1's ASR stage hung on a 30-minute recording until
`ffmpeg -t 120` bounded the work per request. Every budget, memory figure and service time
in a spec assumes inputs of a bounded size: declare the cap (`max_input_bytes`) on the
stage that enforces it, the ingress or the first validation stage.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        stages = ctx.spec.dataflow.stages
        ingress = [s for s in stages if s.kind == StageKind.ingress]
        if ingress and not any(s.max_input_bytes for s in stages):
            yield ctx.at(
                ingress[0],
                "id",
                f"requests enter at stage '{ingress[0].id}' and no stage declares max_input_bytes: an oversized "
                "input reaches every later stage (seed 004 §2.1's 10 MB scan)",
            )
