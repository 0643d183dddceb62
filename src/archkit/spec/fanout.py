"""A stage's fan-out as a distribution: the items and calls each visit sends, drawn together.

`items_per_request` says how many items a visit carries on average (the line crops of a page);
a client that groups them (the reference gateway sends a page's crops by width bucket, at most two
a request) sends a number of calls that is not ⌈items / items_per_call⌉, and pages differ: the P99
is the pages with the most lines (issue 29, docs/benchmarks.md). `fanout.table` is the measured
per-visit distribution, rows [items, calls, weight]; the simulation draws each visit's row
(`archkit.perf.pipesim`), the closed form keeps the means, and AK118 holds the mean items to
`items_per_request`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from archkit.spec.base import MAX_ITEMS, Node

__all__ = ["Fanout"]

Count = Annotated[int, Field(ge=1, le=MAX_ITEMS)]
Weight = Annotated[float, Field(gt=0, le=1e12)]


class Fanout(Node):
    """An empirical distribution of a visit's items and the calls they are sent in."""

    table: list[tuple[Count, Count, Weight]] = Field(
        min_length=1,
        max_length=10_000,
        description="[items, calls, weight] rows: a visit sends `items` items in `calls` calls (split as "
        "evenly as they go) with probability weight / total weight, e.g. [7, 4, 12]: 12 pages of 7 "
        "crops sent in 4 requests; the mean items must equal the stage's items_per_request (AK118)",
    )

    @model_validator(mode="after")
    def _calls_carry_items(self) -> Fanout:
        for i, (items, calls, _) in enumerate(self.table):
            if calls > items:
                raise ValueError(
                    f"table row {i}: {calls} calls for {items} items (a call carries at least one)"
                )
        return self

    @property
    def mean_items(self) -> float:
        """Items a visit sends on average."""
        return sum(k * w for k, _, w in self.table) / sum(w for _, _, w in self.table)

    @property
    def mean_calls(self) -> float:
        """Calls a visit sends on average."""
        return sum(c * w for _, c, w in self.table) / sum(w for _, _, w in self.table)
