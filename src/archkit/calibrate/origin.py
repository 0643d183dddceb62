"""Whether a calibration was measured on the machine it is used for (issue 29, item 1).

A calibration's numbers hold on the machine that measured them: the OCR reference service runs
its models in bf16 on an AVX-512 BF16 CPU and in f32 on an AVX2-only one, 2-3x slower. `archkit
calibrate` records the machine's fingerprint (`archkit.machine.fingerprint`); here it is held
against the target: this machine when the spec's load-test target is on loopback and the
environment is the one applied (the run measures here), else the environment's declared
hardware (`hardware`, `cpu_cores`, `device`). Rule AK230 (`check`), `capacity` and `loadtest`
report a mismatch, located at `environments[].calibration`, naming both machines and the
command that recalibrates.
"""

from __future__ import annotations

import json
import os
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archkit import machine
from archkit.calibrate.apply import CalibrationError, read
from archkit.spec.loader import file_of
from archkit.spec.model import Spec


@dataclass(frozen=True)
class Mismatch:
    """A calibration measured on another machine than the one it predicts for."""

    env_index: int
    env: str
    calibration: str  # as the spec declares it (relative to the spec)
    recorded: str  # the calibrated machine, described
    target: str  # the machine predicted for, described
    differences: list[str] = field(default_factory=list)
    command: str = ""

    @property
    def spec_path(self) -> tuple[Any, ...]:
        return ("environments", self.env_index, "calibration")

    def message(self) -> str:
        return (
            f"calibration {self.calibration} was measured on {self.recorded}; the target is {self.target}: "
            f"{'; '.join(self.differences)}. Its service times do not hold there: recalibrate on the "
            f"target with `{self.command}`"
        )


def _path(spec_file: str, name: str) -> Path:
    base = Path(spec_file).resolve().parent if spec_file and not spec_file.startswith("<") else Path.cwd()
    return base / name


def local_target(spec: Spec) -> bool:
    """Whether the spec's load-test target is on this machine (loopback)."""
    return spec.loadtest is not None and machine.is_loopback_host(spec.loadtest.target.host)


def mismatches(
    spec: Spec, spec_file: str | None = None, here: dict[str, Any] | None = None
) -> list[Mismatch]:
    """Every environment's calibration that does not match its target (see module docstring).

    `here`: this machine's fingerprint (default: measured now), used for the applied environment
    when the target is local; pass the service's runtime in it to compare backend and precision.
    """
    spec_file = spec_file or file_of(spec)
    applied = getattr(spec, "_applied_env", None)
    out = []
    for i, env in enumerate(spec.environments):
        if not env.calibration:
            continue
        try:
            doc = read(_path(spec_file, env.calibration))
        except CalibrationError:
            continue  # a missing or broken file is reported where the calibration is applied
        recorded = doc.get("fingerprint")
        written = os.path.relpath(_path(spec_file, env.calibration))
        command = f"archkit calibrate {spec_file} --env {env.id} -o {written}"
        if env.id == applied and local_target(spec):
            now = here or machine.fingerprint()
            target = f"this machine, {machine.describe(now)}"
            diffs = (
                ["it records no machine fingerprint (written before archkit recorded one)"]
                if not recorded
                else machine.differences(recorded, now)
            )
        else:
            device = env.device.value if env.device is not None else None
            target = f"environment {env.id}'s declared hardware ({env.hardware or 'not described'})"
            if not recorded:
                diffs = ["it records no machine fingerprint (written before archkit recorded one)"]
            else:
                diffs = machine.declared_differences(recorded, env.hardware, env.cpu_cores, device)
        if diffs:
            out.append(
                Mismatch(i, env.id, env.calibration, machine.describe(recorded), target, diffs, command)
            )
    return out


def service_runtime(spec: Spec, host: str | None = None, timeout_s: float = 3.0) -> dict[str, Any] | None:
    """The serving runtime the (loopback) target reports at `/v1/models` (`runtime`), if it does.

    `host`: the service's base URL (default: the spec's load-test target). The OCR reference
    service answers {"runtime": {"backend", "precision", "versions"}}; another service may not,
    and then nothing is compared beyond the machine.
    """
    if host is None:
        if not local_target(spec) or spec.loadtest is None:
            return None
        host = spec.loadtest.target.host
    if not machine.is_loopback_host(host):
        return None
    url = host.rstrip("/") + "/v1/models"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:  # loopback only (local_target)
            body = json.loads(resp.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    runtime = body.get("runtime") if isinstance(body, dict) else None
    return runtime if isinstance(runtime, dict) else None


def triton_version(triton_url: str, timeout_s: float = 3.0) -> str | None:
    """Triton's server version from its metadata endpoint (`GET /v2`), on loopback only."""
    if not machine.is_loopback_host(triton_url):
        return None
    url = (triton_url if "://" in triton_url else f"http://{triton_url}").rstrip("/") + "/v2"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            body = json.loads(resp.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    version = body.get("version") if isinstance(body, dict) else None
    return str(version) if version else None
