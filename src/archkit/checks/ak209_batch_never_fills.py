"""AK209: at the design rate the preferred batch rarely fills, so requests pay the full queue delay."""

from collections.abc import Iterator

from archkit.checks.common import capacities, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class BatchNeverFills(Rule):
    """The target batch rarely fills within max_queue_delay_us, and that delay is a large part of the budget."""

    code = "AK209"
    name = "batch-never-fills"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (the 9th request waits for the previous 8; Triton max_queue_delay 1 ms)"
    rationale = """
Each replica's batcher sees λ/R requests per second; in max_queue_delay_us D it collects on
average λ/R · D more. When that is well below the target batch size b − 1, batches leave on
the timer, half full, and most requests wait the whole D for nothing. This matters when D
is over 10 % of the stage's P99 budget; lower the delay (seed 000 §2.1: 1 ms) or the batch size.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for cap in capacities(ctx):
            p = cap.declared
            batching = cap.stage.model.batching if cap.stage.model else None
            if p is None or batching is None or cap.batch_size <= 1 or not cap.budget_ms:
                continue
            d_ms = cap.max_queue_delay_us / 1000
            expected = (cap.arrival_rps or 0) / cap.replicas * d_ms / 1000
            if expected < 0.5 * (cap.batch_size - 1) and d_ms > 0.1 * cap.budget_ms:
                yield ctx.at(
                    batching,
                    "max_queue_delay_us",
                    f"stage '{cap.stage.id}': a replica sees {expected:.1f} more request(s) in "
                    f"{fmt_ms(d_ms)}, so batches of {cap.batch_size} leave on the timer at "
                    f"~{p.mean_batch:.1f}; the delay is {100 * d_ms / cap.budget_ms:.0f}% of the "
                    f"{fmt_ms(cap.budget_ms)} budget",
                )
