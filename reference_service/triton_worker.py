"""The Triton process: PyTriton serving the detector and recogniser as two models.

Started by ``serve`` as a child in its own process group; not meant to be run by hand.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from .runtimes import BACKENDS, choose, default_precision
from .settings import PROFILES, ModelSettings, auto_profile

LOG = logging.getLogger("reference_service.triton")
VERSION = 1


def _model_config(m: ModelSettings):
    from pytriton.model_config import DynamicBatcher, ModelConfig, QueuePolicy, TimeoutAction

    policy = QueuePolicy(
        timeout_action=TimeoutAction.REJECT,
        default_timeout_microseconds=m.queue_timeout_us,
        allow_timeout_override=True,
        max_queue_size=m.max_queue_size,
    )
    batcher = DynamicBatcher(
        max_queue_delay_microseconds=m.max_queue_delay_us,
        preferred_batch_size=list(m.preferred_batch_sizes),
        default_queue_policy=policy,
    )
    return ModelConfig(batching=True, max_batch_size=m.max_batch_size, batcher=batcher)


def _group_by_shape(requests, key: str) -> dict[tuple, list[int]]:
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault(tuple(r[key].shape[1:]), []).append(i)
    return groups


def detector_fn(threads: int, backend: str = "onnxruntime"):
    """A PyTriton callable (list of requests in, list of responses out) for one instance."""
    from .models import Detector

    det = Detector(threads, backend)

    def infer(requests):
        responses: list[dict | None] = [None] * len(requests)
        # Same-shape requests run as one batch; PyTriton cannot return zero-size outputs, so
        # a page without text gets one zero box and count 0.
        for idx in _group_by_shape(requests, "image").values():
            pages = np.concatenate([requests[i]["image"] for i in idx])
            sizes = [requests[i]["image"].shape[0] for i in idx]
            results = det(pages)
            pos = 0
            for i, n in zip(idx, sizes, strict=False):
                chunk = results[pos : pos + n]
                pos += n
                kmax = max(1, max(len(b) for b, _ in chunk))
                boxes = np.zeros((n, kmax, 8), dtype=np.float32)
                scores = np.zeros((n, kmax), dtype=np.float32)
                count = np.zeros((n, 1), dtype=np.int32)
                for j, (b, s) in enumerate(chunk):
                    boxes[j, : len(b)] = b.reshape(-1, 8)
                    scores[j, : len(s)] = s
                    count[j, 0] = len(b)
                responses[i] = {"boxes": boxes, "scores": scores, "count": count}
        return responses

    return infer


def recogniser_fn(threads: int, backend: str = "onnxruntime"):
    """A PyTriton callable for one recogniser instance."""
    from .models import Recogniser

    rec = Recogniser(threads, backend)

    def infer(requests):
        responses: list[dict | None] = [None] * len(requests)
        for idx in _group_by_shape(requests, "crops").values():
            crops = np.concatenate([requests[i]["crops"] for i in idx])
            widths = np.concatenate([requests[i]["widths"] for i in idx])
            results = rec(crops, widths)
            pos = 0
            for i in idx:
                n = requests[i]["crops"].shape[0]
                chunk = results[pos : pos + n]
                pos += n
                responses[i] = {
                    "text": np.array([[t.encode("utf-8")] for t, _ in chunk], dtype=np.object_),
                    "confidence": np.array([[c] for _, c in chunk], dtype=np.float32),
                }
        return responses

    return infer


TOKEN_ENV = "TRITON_ACCESS_TOKEN"
TOKEN_FILE_ENV = "TRITON_ACCESS_TOKEN_FILE"


def access_token() -> str | None:
    """Triton's access token for its restricted endpoints (statistics, model repository, ...).

    From the file named by TRITON_ACCESS_TOKEN_FILE, else TRITON_ACCESS_TOKEN, else None (PyTriton
    then draws a random one per start). A known token lets perf_analyzer and `archkit calibrate`
    read the statistics endpoint (`-H triton-access-token:...`). Never printed or logged.
    """
    path = os.environ.get(TOKEN_FILE_ENV)
    if path:
        token = Path(path).read_text(encoding="utf-8").strip()
        if token:
            return token
    return os.environ.get(TOKEN_ENV) or None


# PyTriton 0.7.0 starts a model's instances side by side, one Triton python-backend stub each.
# The first stub serves the model's config on a unix socket; the others wait for the socket
# file and connect once. The file appears at bind(), before listen(), so on a loaded machine
# a second instance can connect in between, get ECONNREFUSED, and fail the model's load; the
# worker then exits and the supervisor starts it again, which doubled a chaos test's recovery
# (a clean-clone `make test`, 2026-12-02: 13 s lost to the failed start, then the backoff).
# The stub runs PyTriton's own communication.py, copied into the model repository at load
# time, so the fix has to travel in that copy: retry the connect on ECONNREFUSED until the
# function's own deadline, and give the deadline 10 s instead of 1 s. Upstream text that does
# not match leaves the file as it is (the supervisor's restart still recovers).
_HANDSHAKE_FIXES = (
    (b"timeout_s: float = 1.0) -> dict:", b"timeout_s: float = 10.0) -> dict:"),
    (
        b"        sock.connect(socket_path.as_posix())\n",
        b"        while True:  # reference_service: retry a connect that races the server's listen()\n"
        b"            try:\n"
        b"                sock.connect(socket_path.as_posix())\n"
        b"                break\n"
        b"            except ConnectionRefusedError:\n"
        b"                if time.time() >= should_stop_before_s:\n"
        b"                    raise\n"
        b"                time.sleep(0.01)\n",
    ),
)


def communication_source() -> Path:
    """The installed PyTriton's communication.py, which it copies to every stub."""
    import pytriton.models.model

    return Path(pytriton.models.model.__file__).parent.parent / "proxy" / "communication.py"


def patched_communication(original: bytes) -> bytes | None:
    """PyTriton's communication.py with the handshake retry, or None when its text has changed."""
    text = original
    for old, new in _HANDSHAKE_FIXES:
        if text.count(old) != 1:
            return None
        text = text.replace(old, new)
    return text


def _retry_handshakes() -> None:
    """Make the stubs' copy of communication.py retry the handshake (see above)."""
    from pytriton.models.model import Model

    fixed = patched_communication(communication_source().read_bytes())
    if fixed is None:
        LOG.warning("PyTriton's communication.py is not the expected text; handshake retry not applied")
        return
    get_files, generate = Model.get_proxy_model_files, Model.generate_model

    def get_proxy_model_files(self):
        files = get_files(self)
        key = f"file:{self.model_version}/communication.py"
        if key in files:
            files[key] = fixed
        return files

    def generate_model(self, model_repository):
        generate(self, model_repository)
        (model_repository / self.model_name / str(self.model_version) / "communication.py").write_bytes(fixed)

    Model.get_proxy_model_files = get_proxy_model_files
    Model.generate_model = generate_model


def _watch_parent(parent: int) -> None:
    """Stop when the supervising ``serve`` process is gone (no orphaned Triton)."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            LOG.warning("supervisor %d gone; stopping", parent)
            os.kill(os.getpid(), signal.SIGINT)
            return


SERVER_ENV = "OCR_TRITON_SERVER"
SERVERS = ("native", "pytriton")


def _serve_native(args: argparse.Namespace, det: ModelSettings, rec: ModelSettings, backend: str) -> None:
    """Run tritonserver with the models in its python backend (triton_native) until stopped."""
    from . import triton_native

    cmd = triton_native.server_command(
        args.workspace,
        det,
        rec,
        host=args.host,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        threads=args.threads,
        backend=backend,
        token=access_token(),
    )
    proc = triton_native.run(cmd)
    stop = threading.Event()
    # SIGINT/SIGTERM (the supervisor's stop) or the supervisor gone: stop tritonserver cleanly.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    parent = os.getppid()
    while proc.poll() is None and not stop.is_set():
        stop.wait(0.5)
        if os.getppid() != parent:
            LOG.warning("supervisor %d gone; stopping", parent)
            stop.set()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # A stop that was asked for exits 0; tritonserver dying on its own is a failure (the
    # supervisor restarts the worker either way, and logs the code).
    sys.exit(0 if stop.is_set() else 1)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="reference_service triton")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--http-port", type=int, required=True)
    ap.add_argument("--grpc-port", type=int, required=True)
    ap.add_argument("--metrics-port", type=int, required=True)
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--profile", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--det-instances", type=int, default=None)
    ap.add_argument("--rec-instances", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per instance")
    ap.add_argument(
        "--backend",
        choices=["auto", *BACKENDS],
        default="auto",
        help="inference runtime (auto: $OCR_BACKEND, else the profile's first installed one)",
    )
    ap.add_argument(
        "--server",
        choices=SERVERS,
        default=os.environ.get(SERVER_ENV, "native") or "native",
        help="native: Triton's python backend runs the models in its stubs (default); "
        f"pytriton: PyTriton's proxy to this process (${SERVER_ENV} sets the default)",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s triton-worker %(levelname)s %(message)s")

    import dataclasses

    profile = PROFILES[auto_profile() if args.profile == "auto" else args.profile]
    det = dataclasses.replace(profile.detector, instances=args.det_instances or profile.detector.instances)
    rec = dataclasses.replace(
        profile.recogniser, instances=args.rec_instances or profile.recogniser.instances
    )
    backend = choose(profile.backends) if args.backend == "auto" else args.backend
    print(
        f"triton-worker: {profile.name} profile, backend {backend} ({default_precision(backend)})",
        file=sys.stderr,
        flush=True,
    )
    if args.server == "native":
        _serve_native(args, det, rec, backend)
        return
    from pytriton.model_config import Tensor
    from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

    # PyTriton handles only SIGINT; map SIGTERM onto it for a clean stop.
    signal.signal(signal.SIGTERM, lambda *_: os.kill(os.getpid(), signal.SIGINT))
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    config = TritonConfig(
        http_address=args.host,
        http_port=args.http_port,
        grpc_address=args.host,
        grpc_port=args.grpc_port,
        metrics_address=args.host,
        metrics_port=args.metrics_port,
        allow_gpu_metrics=False,
        exit_timeout_secs=2,
        log_verbose=0,
    )
    security = TritonSecurityConfig(access_token=access_token())
    _retry_handshakes()
    with Triton(config=config, workspace=args.workspace, security_config=security) as triton:
        triton.bind(
            model_name=det.name,
            model_version=VERSION,
            infer_func=[detector_fn(args.threads, backend) for _ in range(det.instances)],
            inputs=[Tensor(name="image", dtype=np.uint8, shape=(-1, -1, 3))],
            outputs=[
                Tensor(name="boxes", dtype=np.float32, shape=(-1, 8)),
                Tensor(name="scores", dtype=np.float32, shape=(-1,)),
                Tensor(name="count", dtype=np.int32, shape=(1,)),
            ],
            config=_model_config(det),
            strict=False,
        )
        triton.bind(
            model_name=rec.name,
            model_version=VERSION,
            infer_func=[recogniser_fn(args.threads, backend) for _ in range(rec.instances)],
            inputs=[
                Tensor(name="crops", dtype=np.uint8, shape=(48, -1, 3)),
                Tensor(name="widths", dtype=np.int32, shape=(1,)),
            ],
            outputs=[
                Tensor(name="text", dtype=bytes, shape=(1,)),
                Tensor(name="confidence", dtype=np.float32, shape=(1,)),
            ],
            config=_model_config(rec),
            strict=False,
        )
        triton.serve()


if __name__ == "__main__":
    main()
