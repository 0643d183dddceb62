"""Fixtures for the OCR reference service: the live service on free loopback ports.

The service runs under its own virtual environment (reference_service/.venv, built by
``make reference-venv``); these tests talk to it over HTTP only.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICE_PY = ROOT / "reference_service" / ".venv" / "bin" / "python"
GOLDEN = ROOT / "reference_service" / "golden"
MAX_INFLIGHT = 4
sys.path.insert(0, str(ROOT))


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (from /proc)."""
    from reference_service.common.supervisor import descendants as _d

    return _d(pid)


def comm(pid: int) -> str:
    """Command name of a live (not zombie) process, else ''."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
    return "" if state in "ZX" else name


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MiB."""
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def png_stream(width: int, height: int, bit_depth: int = 8, rows: int | None = None) -> bytes:
    """A greyscale PNG of zeros built row by row (a 10000x10000 page is ~100 KB compressed).

    ``rows`` < height writes fewer rows than the header declares (a truncated image).
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([bit_depth, 0, 0, 0, 0])
    row = b"\x00" * (1 + (width * bit_depth + 7) // 8)
    comp = zlib.compressobj(9)
    parts = [comp.compress(row) for _ in range(height if rows is None else rows)]
    parts.append(comp.flush())
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")


@dataclass
class Service:
    """A running reference service."""

    url: str
    pid: int
    triton_http: str
    triton_metrics: str
    redis_port: int | None
    log: Path
    proc: subprocess.Popen
    private_tmp: Path
    stop_report: dict | None = None

    def stop(self) -> dict:
        """SIGTERM the service once; the report says how long it took and what was left."""
        if self.stop_report is None:
            self.stop_report = stop_service(self.proc, self.private_tmp)
        return self.stop_report

    def tritonserver_pids(self) -> list[int]:
        return [p for p in descendants(self.pid) if comm(p) == "tritonserver"]

    def stub_dirs(self) -> set[Path]:
        return stub_dirs(self.pid)

    def stub_pids(self) -> list[int]:
        """The python-backend stub processes (one per model instance) under the service."""
        return [p for p in descendants(self.pid) if comm(p).startswith("triton_python")]


def stub_dirs(pid: int) -> set[Path]:
    """/tmp/folderXXXXXX copies that Triton's python-backend stubs under ``pid`` run from."""
    found = set()
    for p in descendants(pid):
        try:
            args = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for a in args:
            text = a.decode(errors="replace")
            if text.startswith("/tmp/folder") and text.endswith("/model.py"):
                found.add(Path("/tmp", text.split("/")[2]))
    return found


def _wait_ready(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"service exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise TimeoutError(f"service not ready in {timeout_s} s")


@pytest.fixture(scope="session")
def redis_server():
    """A private redis-server on a free loopback port, or None when Redis is not installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        yield None
        return
    port = free_ports(1)[0]
    tmp = tempfile.mkdtemp(prefix="ocr-redis-")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield {"port": port, "proc": proc}
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


def start_service(base: Path, prefix: str, extra: list[str], redis_port: int | None = None) -> Service:
    """`python -m reference_service serve` on four free loopback ports, ready to answer.

    Its log goes to `base`/serve.log. A private TMPDIR (named `prefix`…): after SIGTERM it
    must be empty again (no run folder left behind); short, under /tmp, because PyTriton puts
    unix sockets (108-byte path limit) in its workspace. Stopped again if it never gets ready.
    """
    http, t_http, t_grpc, t_metrics = free_ports(4)
    log = base / "serve.log"
    private_tmp = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    cmd = [
        str(SERVICE_PY),
        "-m",
        "reference_service",
        "serve",
        "--http-port",
        str(http),
        "--triton-http-port",
        str(t_http),
        "--triton-grpc-port",
        str(t_grpc),
        "--triton-metrics-port",
        str(t_metrics),
        *extra,
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TMPDIR": str(private_tmp)},
        )
    url = f"http://127.0.0.1:{http}"
    try:
        _wait_ready(url, proc, 120)
    except BaseException:
        stop_service(proc, private_tmp)
        shutil.rmtree(private_tmp, ignore_errors=True)
        raise
    return Service(
        url,
        proc.pid,
        f"http://127.0.0.1:{t_http}",
        f"http://127.0.0.1:{t_metrics}",
        redis_port,
        log,
        proc,
        private_tmp,
    )


@pytest.fixture(scope="session")
def service(redis_server, tmp_path_factory):
    """The whole service (Triton + gateway) on free ports; always stopped afterwards."""
    if not SERVICE_PY.exists():
        if os.environ.get("ARCHKIT_REQUIRE_LIVE"):
            pytest.fail("reference_service/.venv is missing; run `make reference-venv`")
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    extra = ["--max-inflight", str(MAX_INFLIGHT)]
    if redis_server is not None:
        extra += ["--redis-url", f"redis://127.0.0.1:{redis_server['port']}/0"]
    svc = start_service(
        tmp_path_factory.mktemp("reference_service"),
        "ocrt-",
        extra,
        redis_server["port"] if redis_server else None,
    )
    private_tmp = svc.private_tmp
    try:
        yield svc
    finally:
        svc.stop()
        shutil.rmtree(private_tmp, ignore_errors=True)


def stop_service(proc: subprocess.Popen, private_tmp: Path) -> dict:
    """SIGTERM the service; report how long it took and what it left behind."""
    children = {p: comm(p) for p in descendants(proc.pid)}
    stubs = stub_dirs(proc.pid)
    cmdlines = {
        p: Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ")[:120].decode(errors="replace")
        for p in children
        if Path(f"/proc/{p}/cmdline").exists()
    }
    started = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    stop_s = time.monotonic() - started
    time.sleep(0.3)
    left = [f"{p} {cmdlines.get(p, c)}" for p, c in children.items() if c and comm(p) == c]
    for p, c in children.items():
        if c and comm(p) == c:
            os.kill(p, signal.SIGKILL)
    files = sorted(str(p.relative_to(private_tmp)) for p in private_tmp.iterdir())
    files += [str(d) for d in stubs if d.exists()]
    return {
        "stop_s": stop_s,
        "leftover_processes": left,
        "leftover_tmp": files,
        "returncode": proc.returncode,
    }


@pytest.fixture(scope="session")
def golden_pngs() -> dict[str, bytes]:
    """Golden-set images by manifest name."""
    return {f"images/{p.name}": p.read_bytes() for p in sorted((GOLDEN / "images").glob("*.png"))}


def unique_png(data: bytes, salt: int) -> bytes:
    """The same picture with a different byte stream (a tEXt chunk), so it misses the cache."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("salt", str(salt))
    buf = io.BytesIO()
    Image.open(io.BytesIO(data)).save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()
