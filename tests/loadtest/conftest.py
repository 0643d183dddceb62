"""Fixtures for load-test tests: the toy HTTP service on 127.0.0.1, always stopped afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from archkit.process import stop

HERE = Path(__file__).resolve().parent
TOY_SPEC = HERE / "specs" / "toy.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Toy:
    """A running toy service: its URL, pid, live controls and server-side timing log."""

    def __init__(self, proc: subprocess.Popen, port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def control(self, **cfg) -> None:
        req = urllib.request.Request(self.url + "/control", data=json.dumps(cfg).encode(), method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def timings(self) -> list[float]:
        return json.loads(urllib.request.urlopen(self.url + "/timings", timeout=5).read())


@pytest.fixture
def toy_server():
    """Factory: start a toy service with the given options; every one started is stopped at the end."""
    started: list[subprocess.Popen] = []

    def start(**opts) -> Toy:
        port = free_port()
        args = [sys.executable, str(HERE / "toyserver.py"), "--port", str(port)]
        for k, v in opts.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return Toy(proc, port)

    yield start
    for proc in started:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)  # a paused server cannot die of SIGTERM
            stop(proc, timeout=5)


def toy_spec(tmp_path: Path, port: int, **changes) -> Path:
    """The toy spec pointed at `port`, with dotted-path changes, written under tmp_path."""
    data = yaml.safe_load(TOY_SPEC.read_text(encoding="utf-8"))
    data["loadtest"]["target"]["host"] = f"http://127.0.0.1:{port}"
    data["observability"]["scrape"][0]["port"] = port
    for svc in data["topology"]["services"]:
        for p in svc["ports"]:
            p["port"] = port
    for key, value in changes.items():
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if value is None:
            node.pop(last, None)
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value
    out = tmp_path / "toy.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


@pytest.fixture
def wait_until():
    def wait(pred, timeout: float = 5.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(0.05)
        return False

    return wait
