"""AK205: requests give up sooner than a model reload lasts."""

from collections.abc import Iterator

from archkit.checks.common import fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class QueueWaitBelowReload(Rule):
    """The batcher's queue timeout or a caller's timeout is shorter than the model's reload time."""

    code = "AK205"
    name = "queue-wait-below-reload"
    severity = Severity.WARNING
    source = "seed 000 §2.2 (CUDA context rebuild averages 83 ms; queued requests time out)"
    rationale = """
A model update makes Triton rebuild the CUDA context; requests arriving meanwhile queue
for `reload_ms`. The seed says the queue delay "must be greater than" the rebuild time —
what has to outlast the reload is whatever gives up on a queued request: the batcher's
queue timeout (`batching.queue_timeout_us`) and the timeout of the calls that target the
stage. If either is shorter, every model update becomes a burst of errors. (The batching
delay itself, `max_queue_delay_us`, should stay short — seed 000 §2.1 uses 1 ms.)
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for st in spec.dataflow.stages:
            m = st.model
            if m is None or m.reload_ms is None:
                continue
            bt = m.batching
            if bt and bt.queue_timeout_us is not None and bt.queue_timeout_us / 1000 < m.reload_ms:
                yield ctx.at(
                    bt,
                    "queue_timeout_us",
                    f"queue timeout {fmt_ms(bt.queue_timeout_us / 1000)} < reload time "
                    f"{fmt_ms(m.reload_ms)} of '{st.id}': queued requests are dropped during every reload",
                )
            for c in spec.controlflow.calls:
                if c.target == st.id and c.timeout_ms is not None and c.timeout_ms < m.reload_ms:
                    yield ctx.at(
                        c,
                        "timeout_ms",
                        f"call '{c.id}' times out after {fmt_ms(c.timeout_ms)}, before a reload of "
                        f"'{st.id}' ({fmt_ms(m.reload_ms)}) ends: every model update fails requests",
                    )
