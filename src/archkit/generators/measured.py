"""A tolerant reader of load-test reports: measured latencies beside the spec's budgets.

The report is written by `archkit loadtest` (src/archkit/loadtest/); this reader accepts its
shape and close variants so the review page keeps working while that format evolves:
`archkit loadtest` writes `measured.json` (schema in src/archkit/loadtest/report.py):
`{"spec", "level", "level_kind", "env", "stages": {id: {"p50_ms", "p95_ms", "p99_ms", "error_rate"}} | [{"id"|"stage": id, ...}],
  "end_to_end" | "overall" | "summary": {"p50_ms", "p95_ms", "p99_ms", "throughput_rps", "error_rate"}}`
and, for a report of several levels, the last level's figures. Values in seconds (`p99_s`)
are converted to milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

METRICS = ("p50_ms", "p95_ms", "p99_ms", "throughput_rps", "error_rate")
LATENCY = ("p50_ms", "p95_ms", "p99_ms")


@dataclass
class Measured:
    """Measured values per stage and end to end (only numbers that were found)."""

    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    end_to_end: dict[str, float] = field(default_factory=dict)
    about: dict[str, str] = field(default_factory=dict)  # spec, level, level_kind, env, passed

    def stage(self, stage_id: str) -> dict[str, float]:
        return self.stages.get(stage_id, {})


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _figures(d: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    if not isinstance(d, dict):
        return out
    latency = d.get("latency_ms") if isinstance(d.get("latency_ms"), dict) else {}
    for key in METRICS:
        base = key.removesuffix("_ms")
        candidates = [d.get(key), latency.get(base), latency.get(key)]
        if key.endswith("_ms"):
            s = _number(d.get(f"{base}_s"))
            candidates.append(s * 1000 if s is not None else None)
        if key == "throughput_rps":
            candidates += [d.get("rps"), d.get("qps")]
        for c in candidates:
            n = _number(c)
            if n is not None:
                out[key] = n
                break
    return out


def read_measured(data: Any) -> Measured | None:
    """Measured figures from a parsed report, or None when it holds none we understand."""
    if not isinstance(data, dict):
        return None
    levels = data.get("levels")
    if isinstance(levels, list) and levels and isinstance(levels[-1], dict) and "stages" not in data:
        data = {**levels[-1], **{k: v for k, v in data.items() if k != "levels"}}
    elif isinstance(levels, dict) and levels and "stages" not in data:
        data = list(levels.values())[-1]
    m = Measured()
    for key in ("spec", "level", "level_kind", "env", "passed"):
        if isinstance(data.get(key), (str, bool)):
            m.about[key] = str(data[key]).lower() if isinstance(data[key], bool) else data[key]
    stages = data.get("stages")
    if isinstance(stages, dict):
        for sid, figs in stages.items():
            f = _figures(figs)
            if f:
                m.stages[str(sid)] = f
    elif isinstance(stages, list):
        for item in stages:
            if isinstance(item, dict):
                sid = item.get("id", item.get("stage", item.get("name")))
                f = _figures(item)
                if sid is not None and f:
                    m.stages[str(sid)] = f
    for key in ("end_to_end", "overall", "summary", "total", "e2e"):
        f = _figures(data.get(key))
        if f:
            m.end_to_end = f
            break
    else:
        m.end_to_end = _figures(data)
    return m if (m.stages or m.end_to_end) else None


def over_budget(budget: Any, figures: dict[str, float]) -> list[str]:
    """The latency keys whose measured value exceeds the budget object's value."""
    out = []
    for key in LATENCY:
        b = getattr(budget, key, None)
        if b is not None and key in figures and figures[key] > b:
            out.append(key)
    return out
