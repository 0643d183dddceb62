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

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from archkit.errors import InputError

METRICS = ("p50_ms", "p95_ms", "p99_ms", "throughput_rps", "error_rate")
LATENCY = ("p50_ms", "p95_ms", "p99_ms")
# A report of every stage of a 1,000-stage spec at every level is well under 1 MiB.
MAX_REPORT_BYTES = 16 * 1024 * 1024


class MeasuredError(InputError):
    """A `--measured` file that cannot be read as a load-test report (one line, file and place)."""


def load_report(path: str | os.PathLike) -> Any:
    """The parsed JSON of a load-test report, read with a size cap; NaN and Infinity, which
    Python's json accepts but JSON does not, are refused with their line and column."""
    from archkit.spec.loader import ReadError, read_capped

    name = str(path)
    try:
        raw = read_capped(path, MAX_REPORT_BYTES, what="a load-test report")
    except ReadError as exc:
        raise MeasuredError(f"{name}: {exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise MeasuredError(f"{name}:{line}: not UTF-8 text") from None

    def constant(word: str) -> Any:
        at = text.find(word)
        line = text.count("\n", 0, at) + 1
        col = at - (text.rfind("\n", 0, at) + 1) + 1
        raise MeasuredError(f"{name}:{line}:{col}: {word} is not a number (JSON has no NaN or infinity)")

    try:
        return json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise MeasuredError(f"{name}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise MeasuredError(f"{name}: JSON nests too deeply") from None
    except ValueError as exc:  # e.g. an integer over Python's 4,300-digit limit
        raise MeasuredError(f"{name}: not usable JSON: {str(exc)[:120]}") from None


@dataclass
class Measured:
    """Measured values per stage and end to end (only numbers that were found)."""

    stages: dict[str, dict[str, float]] = field(default_factory=dict)
    end_to_end: dict[str, float] = field(default_factory=dict)
    about: dict[str, str] = field(default_factory=dict)  # spec, level, level_kind, env, passed
    # The report's own prediction beside its measurement (`predicted` in measured.json):
    # (scope, quantity, predicted, measured, error in % of the measured value).
    fidelity: list[tuple[str, str, float, float, float]] = field(default_factory=list)

    def stage(self, stage_id: str) -> dict[str, float]:
        return self.stages.get(stage_id, {})


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer too large for a float
        return None
    return f if math.isfinite(f) and f >= 0 else None


def _figures(d: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    if not isinstance(d, dict):
        return out
    raw = d.get("latency_ms")
    latency: dict[str, Any] = raw if isinstance(raw, dict) else {}
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
    m.fidelity = _fidelity(data.get("predicted"))
    return m if (m.stages or m.end_to_end) else None


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _fidelity(pred: Any) -> list[tuple[str, str, float, float, float]]:
    """Predicted vs measured rows, end to end first, then per stage, then the knee; bounded."""
    rows: list[tuple[str, str, float, float, float]] = []
    if not isinstance(pred, dict):
        return rows

    def add(scope: str, table: Any) -> None:
        if not isinstance(table, dict):
            return
        for quantity, cell in sorted(table.items()):
            if len(rows) >= 200 or not isinstance(cell, dict):
                continue
            p, m, e = (_finite(cell.get(k)) for k in ("predicted", "measured", "error_pct"))
            if p is not None and m is not None and e is not None:
                rows.append((scope, str(quantity)[:40], p, m, e))

    add("end to end", pred.get("end_to_end"))
    stages = pred.get("stages")
    if isinstance(stages, dict):
        for sid, table in sorted(stages.items()):
            add(f"stage {str(sid)[:60]}", table)
    knee = pred.get("knee_rps")
    if isinstance(knee, dict):
        add("stress", {"knee_rps": knee})
    return rows


def over_budget(budget: Any, figures: dict[str, float]) -> list[str]:
    """The latency keys whose measured value exceeds the budget object's value."""
    out = []
    for key in LATENCY:
        b = getattr(budget, key, None)
        if b is not None and key in figures and figures[key] > b:
            out.append(key)
    return out
