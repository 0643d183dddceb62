"""The memory-growth alert (seed 000 §5.4): a long-running server's memory slope over hours.

A leak of 12 MB an hour (seed 000 §5.4's DataLoader workers) takes days to reach a usage
threshold; `deriv` over a window of hours sees it on the first day. The promtool cases feed a
gauge that rises at twice the allowed slope (fires) and one that stays flat (quiet), sampled
every 10 minutes so that the window fills in tens of samples.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archkit.plans.alerts.model import Alert, Case, Series, fmt_number

if TYPE_CHECKING:
    from archkit.plans.alerts.planner import Planner

INTERVAL_MIN = 10  # promtool sample spacing of the cases: a 6 h window holds 36 samples
START_BYTES = 2e9  # the cases' resident memory at the start (a 2 GB model server)


def memory_growth_alert(p: Planner) -> Alert | None:
    """`MemoryGrowth` on the spec's memory-growth signal, or None when it declares none."""
    g = p.obs.golden_signals.memory_growth
    if g is None:
        return None
    s = Series.of(g.metric, g.labels)
    per_s = g.max_mb_per_hour * 1e6 / 3600  # bytes per second: deriv's unit
    query = f"max(deriv({s}[{g.window}]))"
    minutes = g.window_min + p.for_min + 2 * INTERVAL_MIN  # the window filled, then the `for`
    samples = minutes // INTERVAL_MIN + 5
    step = 2 * g.max_mb_per_hour * 1e6 * INTERVAL_MIN / 60  # twice the allowed slope, per sample
    return Alert(
        name=p.name("MemoryGrowth"),
        group="golden",
        expr=f"{query} > {fmt_number(per_s)}",
        query=query,
        threshold=per_s,
        windows=(g.window,),
        severity="ticket",
        summary=(
            f"{p.spec.metadata.name}: memory grows faster than {fmt_number(g.max_mb_per_hour)} MB/h "
            f"over {g.window}"
        ),
        description=(
            "A slow leak in a long-running server (seed 000 §5.4: DataLoader workers, 12 MB/h): call "
            "torch.cuda.empty_cache() in a finally block, or move to an IterableDataset."
        ),
        for_=p.for_,
        labels={},
        tree=None,
        fire=Case(
            [(str(s), f"{fmt_number(START_BYTES)}+{fmt_number(step)}x{samples}")], minutes, INTERVAL_MIN
        ),
        quiet=Case([(str(s), p.gauge(START_BYTES, samples))], minutes, INTERVAL_MIN),
        series=[g.metric],
    )
