"""AK616: a model service has no memory-growth signal."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class NoMemoryGrowthSignal(Rule):
    """A spec with model or LLM stages declares no memory-growth golden signal (a slow leak goes unseen)."""

    code = "AK616"
    name = "no-memory-growth-signal"
    severity = Severity.WARNING
    source = "seed 000 §5.4 (DataLoader workers leaked 12 MB an hour with num_workers=4)"
    rationale = """
Seed 000 §5.4's model server leaked 12 MB an hour through PyTorch DataLoader worker processes
(`num_workers=4`). A leak that slow never crosses a usage threshold within a day, and a restart
hides it; its slope over hours shows it on the first day. Declare
`observability.golden_signals.memory_growth` (the server's memory gauge, e.g.
`process_resident_memory_bytes`); the alert planner emits `MemoryGrowth` on
`deriv(series[6h])` above 6 MB/h, half the seed's leak. An LLM engine (a `kind: llm` stage)
is a long-running model server too: its process holds the weights and a KV cache it must
give back, so it is held to the same signal.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        if (
            any(s.model or s.llm for s in spec.dataflow.stages)
            and spec.observability.golden_signals.memory_growth is None
        ):
            yield ctx.at(
                spec.observability,
                "golden_signals",
                "no memory_growth golden signal for the long-running model server(s) (seed 000 §5.4)",
            )
