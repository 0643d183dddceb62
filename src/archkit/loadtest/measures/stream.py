"""Streaming LLM measures: TTFT, every inter-token gap, TPOT, output tokens/s, stream setup, chunks per token.

Definitions (DESIGN.md, LLM serving; vLLM's benchmark times TTFT and ITL alike, and AIPerf's
"ITL" is TPOT here, its inter-chunk latency our ITL when a chunk is a token): TTFT runs from the actual
send to the first chunk with non-empty content (a role-only first chunk is not a token); ITL is
every gap between content chunks divided by the tokens the later chunk carried, recorded once
per token (a chunk can carry several: the server's per-chunk count when it sends one, else the
stream's `usage.completion_tokens` spread evenly); TPOT is per request, (end − TTFT) ÷ (output
tokens − 1). Only successful streamed requests count: a failure has no meaningful token times.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from archkit.loadtest.measures.base import Measure, Sample, register_measure


def _end_ms(s: Sample) -> float | None:
    st = s.stream
    if st is None or not st.content_ms:
        return None
    return st.done_ms if st.done_ms is not None else st.content_ms[-1]


@register_measure
class TimeToFirstToken(Measure):
    """Time to first token: send → first non-empty content delta."""

    name = "ttft_ms"
    title = "time to first token (send → first non-empty content)"
    judged = True

    def values(self, sample: Sample) -> Sequence[float]:
        st = sample.stream
        return (st.content_ms[0],) if st is not None and st.content_ms else ()


@register_measure
class InterTokenLatency(Measure):
    """Inter-token latency: every gap between content chunks, per token it carried."""

    name = "itl_ms"
    title = "inter-token latency (every gap, per token)"
    judged = True

    def values(self, sample: Sample) -> Sequence[float]:
        st = sample.stream
        if st is None or len(st.content_ms) < 2:
            return ()
        per_chunk = st.tokens_per_chunk()
        out: list[float] = []
        for i in range(1, len(st.content_ms)):
            tokens = max(per_chunk[i], 1e-9)
            gap = (st.content_ms[i] - st.content_ms[i - 1]) / tokens
            out += [gap] * max(1, round(tokens))
        return out


@register_measure
class TimePerOutputToken(Measure):
    """Time per output token of one request: (end − TTFT) ÷ (output tokens − 1)."""

    name = "tpot_ms"
    title = "time per output token (per request)"
    judged = True

    def values(self, sample: Sample) -> Sequence[float]:
        st, end = sample.stream, _end_ms(sample)
        if st is None or end is None or not st.output_tokens or st.output_tokens < 2:
            return ()
        return ((end - st.content_ms[0]) / (st.output_tokens - 1),)


@register_measure
class OutputTokensPerSecond(Measure):
    """Output tokens per second of one request, over its whole time from send to end."""

    name = "output_tokens_per_s"
    title = "output tokens/s (per request, send → end)"
    unit = "tokens/s"

    def values(self, sample: Sample) -> Sequence[float]:
        st, end = sample.stream, _end_ms(sample)
        if st is None or end is None or not st.output_tokens or end <= 0:
            return ()
        return (st.output_tokens / (end / 1000.0),)


@register_measure
class StreamSetup(Measure):
    """Stream setup: send → response headers (connection, request, the server accepting it)."""

    name = "setup_ms"
    title = "stream setup (send → response headers)"

    def values(self, sample: Sample) -> Sequence[float]:
        st = sample.stream
        return (st.setup_ms,) if st is not None and st.setup_ms is not None else ()


@register_measure
class ChunksPerToken(Measure):
    """Content chunks per output token over all streamed requests (1.0: one token per chunk)."""

    name = "chunks_per_token"
    title = "content chunks per output token"
    unit = "ratio"
    counters = ("content_chunks", "output_tokens")

    def counts(self, sample: Sample) -> dict[str, int]:
        st = sample.stream
        if st is None or not st.content_ms:
            return {}
        return {"content_chunks": len(st.content_ms), "output_tokens": int(st.output_tokens or 0)}

    def summary(self, h: Any, totals: dict[str, int]) -> dict[str, Any]:
        chunks, tokens = totals.get("content_chunks", 0), totals.get("output_tokens", 0)
        return {
            "content_chunks": chunks,
            "output_tokens": tokens,
            "ratio": round(chunks / tokens, 4) if tokens else None,
            "unit": self.unit,
        }


@register_measure
class SloAttainment(Measure):
    """Requests that met *both* their TTFT and TPOT objectives (DistServe's SLO attainment).

    The objectives come with the request (its llm stage's `slo_ttft_ms`/`slo_tpot_ms`, else
    `ttft_p99_ms`/`tpot_ms`: `StreamTrace.slo`). A failed request, or one too short to have a
    TPOT when a TPOT objective is set, misses. Goodput (met requests per second) is the met count
    over the run's duration, which the verdict divides by.
    """

    name = "slo_attainment"
    title = "SLO attainment (TTFT and TPOT objectives both met)"
    unit = "ratio"
    failed_too = True
    counters = ("slo_requests", "slo_met", "slo_ttft_met", "slo_tpot_met")

    def counts(self, sample: Sample) -> dict[str, int]:
        st = sample.stream
        if st is None or not st.slo:
            return {}
        ttft_ok = tpot_ok = not sample.failed and bool(st.content_ms)
        if ttft_ok and "ttft_ms" in st.slo:
            ttft_ok = st.content_ms[0] <= st.slo["ttft_ms"]
        if tpot_ok and "tpot_ms" in st.slo:
            tpot = TimePerOutputToken().values(sample)
            tpot_ok = bool(tpot) and tpot[0] <= st.slo["tpot_ms"]
        return {
            "slo_requests": 1,
            "slo_met": int(ttft_ok and tpot_ok),
            "slo_ttft_met": int(ttft_ok),
            "slo_tpot_met": int(tpot_ok),
        }

    def summary(self, h: Any, totals: dict[str, int]) -> dict[str, Any]:
        n = totals.get("slo_requests", 0)
        return {
            "requests": n,
            "met": totals.get("slo_met", 0),
            "ttft_met": totals.get("slo_ttft_met", 0),
            "tpot_met": totals.get("slo_tpot_met", 0),
            "attainment": round(totals.get("slo_met", 0) / n, 4) if n else None,
            "unit": self.unit,
        }
