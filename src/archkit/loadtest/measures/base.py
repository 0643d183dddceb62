"""The measure interface, the sample it reads and the registry that refuses duplicate names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from archkit.errors import ArchkitError
from archkit.loadtest import hist

STREAM_KEY = "archkit.stream"  # where a protocol puts its StreamTrace in the request event's context


class MeasureError(ArchkitError, ValueError):
    """A measure registered twice, or without a name."""


@dataclass
class StreamTrace:
    """What a streaming response showed, in ms since the request left (`perf_counter` on the client).

    `content_ms[i]` is when the i-th chunk with non-empty content arrived (role-only and empty
    chunks are not content); `chunk_tokens[i]` how many tokens it carried when the server says
    per chunk, else empty (then the tokens of `usage` are spread evenly over the chunks).
    """

    setup_ms: float | None = None  # response headers in: connection, request sent, status line read
    content_ms: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    output_tokens: int | None = None  # the stream's usage.completion_tokens
    prompt_tokens: int | None = None  # the stream's usage.prompt_tokens
    done_ms: float | None = None  # the stream ended ([DONE] or end of body)
    server: dict[str, float] = field(default_factory=dict)  # the server's own timings, if it sends them
    # the request's SLO objectives (ms), from its llm stage's budgets: "ttft_ms", "tpot_ms"
    slo: dict[str, float] = field(default_factory=dict)

    def tokens_per_chunk(self) -> list[float]:
        """Tokens carried by each content chunk: the server's counts, else usage spread evenly."""
        n = len(self.content_ms)
        if self.chunk_tokens and len(self.chunk_tokens) == n:
            return [float(k) for k in self.chunk_tokens]
        if not n:
            return []
        total = self.output_tokens if self.output_tokens else n
        return [total / n] * n


@dataclass
class Sample:
    """One finished request as the load generator saw it."""

    latency_ms: float  # judged latency: from the scheduled send time in an open model
    from_send_ms: float  # from the actual send
    failed: bool
    stream: StreamTrace | None = None


class Measure:
    """One per-request quantity; `values` go into an HDR histogram, `counts` are summed."""

    name: ClassVar[str]  # key in the statistics, e.g. "ttft_ms"
    title: ClassVar[str]  # one line for reports
    unit: ClassVar[str] = "ms"  # values are recorded to 0.001 of this unit (hist.record_ms)
    failed_too: ClassVar[bool] = False  # also measure failed requests
    counters: ClassVar[tuple[str, ...]] = ()  # the keys `counts` adds to
    # a budget judges its percentiles (loadtest.judge_llm.PERCENTILES): the summary carries their
    # 95 % intervals (`ci`), which cost ~0.1 s a measure a phase, so only where a verdict reads them
    judged: ClassVar[bool] = False

    def values(self, sample: Sample) -> Sequence[float]:
        """The values this request contributes (none, one, or one per token)."""
        return ()

    def counts(self, sample: Sample) -> dict[str, int]:
        """Counters this request adds to (summed over requests)."""
        return {}

    def summary(self, h: Any, totals: dict[str, int]) -> dict[str, Any]:
        """What the statistics report: the histogram's percentiles in this measure's unit."""
        s = hist.summary(h)
        suffix = "_ms" if self.unit == "ms" else ""
        out: dict[str, Any] = {"count": s["count"], "unit": self.unit}
        for key in ("mean", "min", "max", "p50", "p95", "p99"):
            out[key + suffix] = s[key + "_ms"]
        if self.judged:  # each percentile's 95 % interval, which the budget verdicts judge on
            out["ci"] = hist.intervals(h)
        return out


MEASURES: dict[str, Measure] = {}
M = TypeVar("M", bound=type[Measure])


def register_measure(cls: M) -> M:
    """Class decorator: one instance under `cls.name`; a second measure of that name is an error."""
    name = getattr(cls, "name", "")
    if not name:
        raise MeasureError(f"measure {cls.__name__} has no name")
    if name in MEASURES and type(MEASURES[name]) is not cls:
        raise MeasureError(
            f"measure {name!r} is registered twice ({type(MEASURES[name]).__name__}, {cls.__name__})"
        )
    MEASURES[name] = cls()
    return cls
