"""``python -m reference_service serve``: Triton worker + gateway on 127.0.0.1, one command."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

from .settings import Settings, auto_profile


def parse(argv: list[str] | None) -> argparse.Namespace:
    d = Settings()
    ap = argparse.ArgumentParser(
        prog="python -m reference_service serve",
        description="Start Triton (detector + recogniser) and the HTTP gateway.",
    )
    ap.add_argument("--host", default=d.host, help="bind address for every server (default 127.0.0.1)")
    ap.add_argument(
        "--external-triton",
        action="store_true",
        help="do not start Triton; use the one at --triton-host (Kubernetes: its own pod)",
    )
    ap.add_argument("--triton-host", default=None, help="Triton's address (default: --host)")
    ap.add_argument("--http-port", type=int, default=d.http_port, help="gateway port (/v1/ocr, /metrics)")
    ap.add_argument("--triton-http-port", type=int, default=d.triton_http_port)
    ap.add_argument("--triton-grpc-port", type=int, default=d.triton_grpc_port)
    ap.add_argument(
        "--triton-metrics-port",
        "--metrics-port",
        type=int,
        default=d.triton_metrics_port,
        help="Triton's Prometheus port (nv_inference_*)",
    )
    ap.add_argument("--max-inflight", type=int, default=d.max_inflight, help="requests beyond this get 429")
    ap.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes)
    ap.add_argument("--max-pixels", type=int, default=d.max_pixels)
    ap.add_argument(
        "--redis-url", default=None, help="use Redis for the result cache (default: in-process LRU)"
    )
    ap.add_argument("--cache-entries", type=int, default=d.cache_entries, help="LRU size; 0 disables caching")
    ap.add_argument(
        "--profile",
        choices=["auto", "cpu", "gpu"],
        default="auto",
        help="batching profile (settings.py); auto: gpu when onnxruntime offers CUDA",
    )
    ap.add_argument("--det-instances", type=int, default=None)
    ap.add_argument("--rec-instances", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads per model instance")
    ap.add_argument("--ready-timeout", type=float, default=120.0, help="exit 1 if not ready in this time")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from .common.serve import run_gateway
    from .gateway import create_app, json_400_protocol
    from .supervisor import TritonSupervisor

    # Keep the path short: PyTriton creates unix sockets (108-byte limit) under it.
    run_dir = Path(tempfile.mkdtemp(prefix="ocr-"))
    # Everything this process writes to TMPDIR (onnxruntime's .ses file, imported by
    # auto_profile) goes into the run folder, which is removed at exit.
    (run_dir / "tmp").mkdir()
    os.environ["TMPDIR"] = str(run_dir / "tmp")
    tempfile.tempdir = None
    settings = Settings(
        host=args.host,
        triton_host=args.triton_host or args.host,
        http_port=args.http_port,
        triton_http_port=args.triton_http_port,
        triton_grpc_port=args.triton_grpc_port,
        triton_metrics_port=args.triton_metrics_port,
        max_inflight=args.max_inflight,
        max_body_bytes=args.max_body_bytes,
        max_pixels=args.max_pixels,
        redis_url=args.redis_url,
        cache_entries=max(args.cache_entries, 0),
        profile=auto_profile() if args.profile == "auto" else args.profile,
        det_instances=args.det_instances,
        rec_instances=args.rec_instances,
    )
    supervisor = None if args.external_triton else TritonSupervisor(settings, run_dir, threads=args.threads)
    app = create_app(settings, supervisor)
    return run_gateway(
        app,
        settings.host,
        settings.http_port,
        run_dir,
        args.ready_timeout,
        lambda: (
            f"http://{settings.host}:{settings.http_port}/v1/ocr ({settings.profile} profile; "
            f"triton http {settings.triton_http_port}, grpc {settings.triton_grpc_port}, "
            f"metrics {settings.triton_metrics_port})"
        ),
        lambda: f"Triton log:\n{supervisor.log_tail(40) if supervisor else ''}",
        poll_s=0.2,
        # Malformed requests get the gateway's JSON error shape (the LLM gateway has no such
        # promise: uvicorn's own plain-text 400 answers there).
        http=json_400_protocol(),
    )
