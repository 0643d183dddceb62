"""Settings of the reference LLM service: ports, engine slots and context, input caps, timeouts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LlmSettings:
    """Everything the gateway and the engine supervisor need; specs/llm-reference.yaml mirrors it."""

    host: str = "127.0.0.1"
    http_port: int = 8090
    engine_port: int = 8091
    model_name: str = "smollm2-135m-instruct-q4_1"
    # Engine: 2 slots over a 2048-token KV cache (1024 per slot). On 2 cores a third running
    # sequence adds step time without adding throughput (docs/benchmarks.md, LLM section).
    parallel: int = 2
    ctx_size: int = 2048
    # One compute thread: llama.cpp's threads meet at a barrier every op, so when a neighbour takes
    # a core the other thread spins; at load average 14 on the 2 shared cores 2 threads decoded at
    # 2,350 ms per token, 1 thread at 25-36 ms (docs/benchmarks.md, LLM section).
    threads: int = 1
    threads_http: int = 4
    batch_size: int = 512  # tokens per llama_decode() at most (prefill chunk)
    seed: int = 42
    # Gateway admission: slots + a short queue; beyond it 429 (the engine would only defer).
    max_inflight: int = 6
    # Input caps: the body, the prompt text, the output tokens a request may ask for.
    max_body_bytes: int = 64 * 1024
    max_prompt_chars: int = 8000  # ~2000 tokens of English: more than a slot's context anyway
    max_output_tokens: int = 512
    default_output_tokens: int = 128
    # Time: to the first byte from the engine, and the whole request.
    first_token_timeout_s: float = 30.0
    request_timeout_s: float = 120.0
    engine_timeout_s: float = 600.0  # llama-server's own read/write timeout
    retry_after_s: int = 1
    # RAG variant (specs/llm-rag-reference.yaml), on when embed_port is set: a second llama-server
    # with --embeddings embeds the question, the gateway searches its passage index and puts the
    # top passages in front of the question.
    embed_port: int | None = None
    rag_passages: int = 1000
    rag_top_k: int = 3
    embed_timeout_s: float = 5.0  # the embed stage's timeout_ms in the RAG spec
    rag_index_dir: str | None = None  # where built indexes are cached (default: ~/.cache/archkit/llm-rag)

    @property
    def rag(self) -> bool:
        return self.embed_port is not None

    @property
    def ctx_per_slot(self) -> int:
        return self.ctx_size // self.parallel
