"""A real Prometheus beside the run: scrapes the target with archkit's rules and records which alerts fired.

Debian's `prometheus` starts in ~0.1 s with its TSDB in a temp dir (design principle D5, docs/sources.md); it listens on
127.0.0.1 only, scrapes every second and evaluates rules every second, so short `for:` windows
(`observability.alert_for: 5s`) can be proven within a bounded run.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from archkit.errors import ArchkitError
from archkit.loadtest.safety import require_loopback
from archkit.process import stop

PROMETHEUS = "/usr/bin/prometheus"


class PrometheusError(ArchkitError, RuntimeError):
    """Prometheus could not be started or queried."""


@dataclass
class AlertEvent:
    """One alert (name + labels): when it went pending and firing, relative to the run start."""

    name: str
    labels: dict
    pending_s: float | None = None
    firing_s: float | None = None
    last_seen_s: float | None = None
    annotations: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "alert": self.name,
            "labels": self.labels,
            "pending_s": self.pending_s,
            "firing_s": self.firing_s,
            "last_seen_s": self.last_seen_s,
            "annotations": self.annotations,
        }


class LivePrometheus:
    """Prometheus in a temp dir on 127.0.0.1, and an alert watcher that polls /api/v1/alerts."""

    def __init__(
        self,
        targets: list[str],
        rule_files: dict[str, str],
        port: int,
        binary: str = PROMETHEUS,
        interval: str = "1s",
    ) -> None:
        for t in targets:
            require_loopback(t, "scrape target")
        self.targets, self.rule_files, self.port, self.binary, self.interval = (
            targets,
            rule_files,
            port,
            binary,
            interval,
        )
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.alerts: dict[tuple, AlertEvent] = {}
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.log = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> dict:
        jobs: dict[str, list[str]] = {}
        paths: dict[str, str] = {}
        for t in self.targets:
            u = urlsplit(t)
            jobs.setdefault(u.path or "/metrics", []).append(u.netloc)
            paths[u.netloc] = u.path or "/metrics"
        scrape = [
            {
                "job_name": f"archkit-{i}",
                "metrics_path": path,
                "scrape_interval": self.interval,
                "static_configs": [{"targets": sorted(set(hosts))}],
            }
            for i, (path, hosts) in enumerate(sorted(jobs.items()))
        ]
        return {
            "global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
            "rule_files": sorted(self.rule_files),
            "scrape_configs": scrape,
        }

    def start(self, timeout: float = 15.0) -> None:
        if not Path(self.binary).exists() and not shutil.which(self.binary):
            raise PrometheusError(f"{self.binary} not found (install Debian's prometheus)")
        self.dir = Path(tempfile.mkdtemp(prefix="archkit-prom-"))
        for name, text in self.rule_files.items():
            (self.dir / name).parent.mkdir(parents=True, exist_ok=True)
            (self.dir / name).write_text(text, encoding="utf-8")
        (self.dir / "prometheus.yml").write_text(
            yaml.safe_dump(self.config(), sort_keys=True), encoding="utf-8"
        )
        self._logf = open(self.dir / "prometheus.log", "w")  # noqa: SIM115 - lives as long as the server
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            cwd=self.dir,
            stdout=self._logf,
            stderr=subprocess.STDOUT,
        )
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise PrometheusError(
                    "prometheus exited: " + (self.dir / "prometheus.log").read_text()[-2000:]
                )
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise PrometheusError(f"prometheus not ready on {self.url} within {timeout} s")
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def mark_start(self) -> None:
        """Alert times are reported relative to this moment (the start of the load)."""
        self.t0 = time.monotonic()

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            self.poll()

    def query(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path, timeout=3) as r:
            return json.loads(r.read())

    def poll(self) -> None:
        try:
            data = self.query("/api/v1/alerts")
        except (OSError, ValueError):
            return
        now = round(time.monotonic() - self.t0, 2)
        for a in data.get("data", {}).get("alerts", []):
            labels = dict(sorted(a.get("labels", {}).items()))
            name = labels.pop("alertname", "?")
            key = (name, tuple(labels.items()))
            ev = self.alerts.get(key)
            if ev is None:
                ev = self.alerts[key] = AlertEvent(name, labels, annotations=a.get("annotations", {}))
            if a.get("state") == "pending" and ev.pending_s is None:
                ev.pending_s = now
            if a.get("state") == "firing" and ev.firing_s is None:
                ev.firing_s = now
                if ev.pending_s is None:
                    ev.pending_s = now
            ev.last_seen_s = now

    def rule_health(self) -> list[dict]:
        """Rules that Prometheus could not evaluate (a broken rule cannot fire)."""
        try:
            groups = self.query("/api/v1/rules").get("data", {}).get("groups", [])
        except (OSError, ValueError):
            return []
        return [
            {"rule": r.get("name"), "health": r.get("health"), "error": r.get("lastError")}
            for g in groups
            for r in g.get("rules", [])
            if r.get("health") not in ("ok", "unknown", None)
        ]

    def results(self) -> list[dict]:
        return [e.to_json() for e in sorted(self.alerts.values(), key=lambda e: (e.pending_s or 0, e.name))]

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)
        if self.proc:
            stop(self.proc, timeout=5)
        if self.dir:
            with contextlib.suppress(OSError):
                self.log = (self.dir / "prometheus.log").read_text()[-4000:]
            self._logf.close()
            shutil.rmtree(self.dir, ignore_errors=True)
