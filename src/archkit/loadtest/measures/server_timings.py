"""The server's own per-request timings (llama.cpp's `timings`), beside the client's decomposition.

llama-server ends each stream with `timings`: `prompt_ms` (prefill of the prompt tokens not
already in its cache) and `predicted_ms` over `predicted_n` generated tokens. Set beside the
client's TTFT and TPOT they split what the client saw: TTFT − prompt_ms is queueing, transfer
and the first decode step; TPOT − the server's per-token decode is what the stream adds per
token. A server that sends no `timings` (vLLM) records nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

from archkit.loadtest.measures.base import Measure, Sample, register_measure


@register_measure
class ServerPrompt(Measure):
    """The server's prefill time for the request (llama.cpp `timings.prompt_ms`)."""

    name = "server_prompt_ms"
    title = "server: prompt (prefill) time"

    def values(self, sample: Sample) -> Sequence[float]:
        st = sample.stream
        got = st.server.get("prompt_ms") if st is not None else None
        return (got,) if got is not None else ()


@register_measure
class ServerDecodePerToken(Measure):
    """The server's decode time per generated token (`timings.predicted_ms` ÷ `predicted_n`)."""

    name = "server_decode_per_token_ms"
    title = "server: decode time per token"

    def values(self, sample: Sample) -> Sequence[float]:
        st = sample.stream
        if st is None:
            return ()
        ms, n = st.server.get("predicted_ms"), st.server.get("predicted_n")
        return (ms / n,) if ms is not None and n else ()
