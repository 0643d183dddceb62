"""The predicted latency-vs-load curve: the pipeline at any offered rate, and where it bends.

`sweep(spec, rates)` predicts each rate with the whole-pipeline model (`pipeline.predict`:
shared processors, batching, admission and rate limits, retries), so past the knee the curve
shows what the limits do: bounded latency and a growing shed share instead of a queue that
grows without end. The knee is the first rate at which the simulated P99 exceeds the
end-to-end P99 budget, more than 1 % of the requests are refused or fail, or the backlog keeps
growing; next to it the closed-form ceiling (`resources.load_model`). `curve_svg` draws the
curve (self-contained SVG, byte-stable) and `curve_png` the same with matplotlib; both take
`measured` points (a load test's) to overlay on the prediction.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from html import escape
from typing import Any

from archkit.errors import InputError
from archkit.perf.pipeline import (
    DEFAULT_REQUESTS,
    DEFAULT_SEED,
    MAX_SIM_BUDGET,
    SIM_BUDGET,
    PipelinePrediction,
    json_ready,
    predict,
)
from archkit.spec.model import Spec

MAX_POINTS = 200  # rates in one sweep: each is a whole-pipeline simulation
LOST_AT_KNEE = 0.01  # refused or failed share that marks the knee


class RateSpecError(InputError, ValueError):
    """A `--rate` value that is not R or A:B:STEP with 0 < A ≤ B and STEP > 0."""


def parse_rates(text: str) -> list[float]:
    """'2.5' -> [2.5]; '1:10:0.5' -> [1, 1.5, ..., 10] (both ends included)."""
    parts = text.split(":")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        raise RateSpecError(f"--rate {text!r}: give R or A:B:STEP in requests per second") from None
    if len(nums) == 1 and nums[0] > 0 and math.isfinite(nums[0]):
        return nums
    if len(nums) != 3 or not all(math.isfinite(x) for x in nums):
        raise RateSpecError(f"--rate {text!r}: give R or A:B:STEP in requests per second")
    a, b, step = nums
    if not (0 < a <= b) or step <= 0:
        raise RateSpecError(f"--rate {text!r}: needs 0 < A ≤ B and STEP > 0")
    count = int(math.floor((b - a) / step + 1e-9)) + 1
    if count > MAX_POINTS:
        raise RateSpecError(f"--rate {text!r}: {count} rates, at most {MAX_POINTS}")
    return [round(a + k * step, 9) for k in range(count)]


@dataclass(frozen=True)
class CurvePoint:
    """The pipeline at one offered rate (latencies in ms of answered requests)."""

    rate_rps: float
    throughput_rps: float
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    mean_ms: float | None
    shed_share: float  # refused by an admission or rate limit
    failed_share: float
    degraded_share: float
    stable: bool
    requests: int


@dataclass(frozen=True)
class MeasuredPoint:
    """A measured point to overlay (a load-test step): offered rate and latency percentiles."""

    rate_rps: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    label: str = "measured"


@dataclass(frozen=True)
class LoadCurve:
    """Predicted points over a range of offered rates, and the knee."""

    name: str
    environment: str | None
    p99_budget_ms: float | None
    ceiling_rps: float | None  # closed-form: the first resource or stage at 100 %
    bottleneck: str | None
    knee_rps: float | None  # first swept rate past the knee (see module docstring); None: not reached
    knee_reason: str
    points: list[CurvePoint] = field(default_factory=list)
    method: str = ""
    budget_note: str | None = None  # the sweep's simulation budget ran out before its last rate
    sim_work: int = 0  # simulated events the sweep spent, all rates together

    def as_dict(self) -> dict[str, object]:
        return json_ready(asdict(self))  # type: ignore[return-value]


def _fin(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _point(p: PipelinePrediction) -> CurvePoint:
    return CurvePoint(
        p.rate_rps,
        p.throughput_rps,
        _fin(p.p50_ms),
        _fin(p.p95_ms),
        _fin(p.p99_ms),
        _fin(p.mean_ms),
        p.shed_share,
        p.failed_share,
        p.degraded_share,
        p.stable,
        p.requests,
    )


def knee_of(points: list[CurvePoint], p99_budget_ms: float | None) -> tuple[float | None, str]:
    """The first point past the knee, and why (P99 over budget, requests lost, overload)."""
    for pt in points:
        if not pt.stable:
            return pt.rate_rps, "the backlog keeps growing"
        lost = pt.shed_share + pt.failed_share
        if lost > LOST_AT_KNEE:
            return pt.rate_rps, f"{100 * lost:.1f} % of the requests refused or failed"
        if p99_budget_ms is not None and pt.p99_ms is not None and pt.p99_ms > p99_budget_ms:
            return pt.rate_rps, f"P99 {pt.p99_ms:.0f} ms over the {p99_budget_ms:g} ms budget"
    return None, "not reached in the swept range"


def sweep(
    spec: Spec,
    rates: list[float],
    env: str | None = None,
    requests: int = DEFAULT_REQUESTS,
    seed: int = DEFAULT_SEED,
    budget: int = SIM_BUDGET,
) -> LoadCurve:
    """Predict the pipeline at each of `rates` (req/s); the same seed at every rate.

    The rates share one `budget` of simulated events (issue 28: a sweep of many rates was as many
    budgets), spent from the lowest rate up; a rate the budget cuts short ends the sweep there
    (its point and the higher rates' are left out) and `budget_note` says so."""
    preds: list[PipelinePrediction] = []
    points: list[CurvePoint] = []
    left, note = budget, None
    ordered = sorted(rates)
    for i, r in enumerate(ordered):
        p = predict(spec, env, rate_rps=r, requests=requests, seed=seed, budget=max(left, 1))
        preds.append(p)
        left -= p.sim_work
        if p.budget_note is not None or (left <= 0 and i + 1 < len(ordered)):
            done = i if p.budget_note is not None else i + 1
            note = (
                f"the sweep spent its budget of {budget:,} simulated events at {r:g} req/s: "
                f"{done} of {len(ordered)} rates simulated (raise it with "
                f"`archkit capacity --sim-budget {min(MAX_SIM_BUDGET, 4 * budget)}`)"
            )
            points += [_point(p)] if p.budget_note is None else []
            break
        points.append(_point(p))
    applied = spec.with_environment(env) if env else spec
    p99_budget = applied.budgets.p99_ms
    knee, why = knee_of(points, p99_budget)
    first = preds[0] if preds else None
    return LoadCurve(
        spec.metadata.name,
        env,
        p99_budget,
        _fin(first.knee_rps) if first else None,
        first.bottleneck if first else None,
        knee,
        why,
        points,
        first.method if first else "",
        note,
        budget - left,
    )


# ---------------------------------------------------------------- drawing

_W, _H, _L, _R, _T, _B = 640, 400, 64, 24, 36, 48  # canvas and margins (px)


def _scale(lo: float, hi: float, a: float, b: float):  # type: ignore[no-untyped-def]
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    e = 10.0 ** math.floor(math.log10(v))
    return float(next(m * e for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * e >= v))


def curve_svg(curve: LoadCurve, measured: list[MeasuredPoint] | None = None) -> str:
    """The predicted P50/P99 vs offered rate, the shed share, the knee and budget; `measured`
    points overlaid as circles (P99) and squares (P50). Self-contained and byte-stable."""
    measured = measured or []
    pts = curve.points
    xmax = _nice_max(max([p.rate_rps for p in pts] + [m.rate_rps for m in measured] + [1e-9]))
    ys = [v for p in pts for v in (p.p50_ms, p.p99_ms) if v is not None]
    ys += [v for m in measured for v in (m.p50_ms, m.p99_ms) if v is not None]
    if curve.p99_budget_ms is not None:
        ys.append(curve.p99_budget_ms)
    ymax = _nice_max(max(ys + [1e-9]))
    x = _scale(0, xmax, _L, _W - _R)
    y = _scale(0, ymax, _H - _B, _T)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
        'font-family="sans-serif" font-size="11">',
        f"<title>{escape(curve.name)}: predicted latency vs offered load</title>",
        f'<rect width="{_W}" height="{_H}" fill="white"/>',
        f'<line x1="{_L}" y1="{_H - _B}" x2="{_W - _R}" y2="{_H - _B}" stroke="black"/>',
        f'<line x1="{_L}" y1="{_T}" x2="{_L}" y2="{_H - _B}" stroke="black"/>',
    ]
    for k in range(6):
        xv, yv = xmax * k / 5, ymax * k / 5
        out.append(f'<text x="{x(xv):.1f}" y="{_H - _B + 16}" text-anchor="middle">{xv:g}</text>')
        out.append(f'<text x="{_L - 6}" y="{y(yv) + 4:.1f}" text-anchor="end">{yv:g}</text>')
        out.append(f'<line x1="{_L}" y1="{y(yv):.1f}" x2="{_W - _R}" y2="{y(yv):.1f}" stroke="#eee"/>')
    out.append(
        f'<text x="{(_L + _W - _R) / 2:.0f}" y="{_H - 12}" text-anchor="middle">offered rate (req/s)</text>'
    )
    out.append(
        f'<text x="14" y="{(_T + _H - _B) / 2:.0f}" transform="rotate(-90 14 {(_T + _H - _B) / 2:.0f})" '
        'text-anchor="middle">latency (ms)</text>'
    )
    if curve.p99_budget_ms is not None:
        yb = y(curve.p99_budget_ms)
        out.append(
            f'<line x1="{_L}" y1="{yb:.1f}" x2="{_W - _R}" y2="{yb:.1f}" stroke="#c00" stroke-dasharray="4 3"/>'
        )
        out.append(
            f'<text x="{_W - _R}" y="{yb - 4:.1f}" text-anchor="end" fill="#c00">P99 budget {curve.p99_budget_ms:g} ms</text>'
        )
    for key, colour in (("p50_ms", "#1f77b4"), ("p99_ms", "#d62728")):
        xy = [(p.rate_rps, getattr(p, key)) for p in pts if getattr(p, key) is not None]
        if xy:
            path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in xy)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
    # the shed share on its own scale (0..100 % over the plot height), dotted
    shed = [(p.rate_rps, p.shed_share + p.failed_share) for p in pts]
    if any(s > 0 for _, s in shed):
        ys_ = _scale(0, 1, _H - _B, _T)
        path = " ".join(f"{x(a):.1f},{ys_(b):.1f}" for a, b in shed)
        out.append(f'<polyline points="{path}" fill="none" stroke="#555" stroke-dasharray="2 2"/>')
    if curve.knee_rps is not None:
        xk = x(curve.knee_rps)
        out.append(
            f'<line x1="{xk:.1f}" y1="{_T}" x2="{xk:.1f}" y2="{_H - _B}" stroke="#2ca02c" stroke-width="1.5"/>'
        )
        out.append(
            f'<text x="{xk + 4:.1f}" y="{_T + 12}" fill="#2ca02c">knee {curve.knee_rps:g} req/s</text>'
        )
    for m in measured:
        if m.p99_ms is not None:
            out.append(
                f'<circle cx="{x(m.rate_rps):.1f}" cy="{y(m.p99_ms):.1f}" r="4" fill="none" stroke="#d62728"/>'
            )
        if m.p50_ms is not None:
            out.append(
                f'<rect x="{x(m.rate_rps) - 3.5:.1f}" y="{y(m.p50_ms) - 3.5:.1f}" width="7" height="7" '
                'fill="none" stroke="#1f77b4"/>'
            )
    legend = [
        ("#1f77b4", "predicted P50"),
        ("#d62728", "predicted P99"),
        ("#555", "refused or failed share (0–100 %)"),
    ]
    if measured:
        legend.append(("#000", "measured: ○ P99, □ P50"))
    for k, (colour, text) in enumerate(legend):
        out.append(f'<text x="{_L + 8 + 150 * k}" y="{_T - 14}" fill="{colour}">{escape(text)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def curve_png(curve: LoadCurve, measured: list[MeasuredPoint] | None = None) -> bytes:
    """The same plot as a PNG (matplotlib, Agg; no timestamps in the file)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    measured = measured or []
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        pts = curve.points
        for key, colour, label in (
            ("p50_ms", "#1f77b4", "predicted P50"),
            ("p99_ms", "#d62728", "predicted P99"),
        ):
            xy = [(p.rate_rps, getattr(p, key)) for p in pts if getattr(p, key) is not None]
            if xy:
                ax.plot([a for a, _ in xy], [b for _, b in xy], color=colour, label=label)
        if curve.p99_budget_ms is not None:
            ax.axhline(curve.p99_budget_ms, color="#c00", linestyle="--", label="P99 budget")
        if curve.knee_rps is not None:
            ax.axvline(curve.knee_rps, color="#2ca02c", label=f"knee {curve.knee_rps:g} req/s")
        mx = [m for m in measured if m.p99_ms is not None]
        if mx:
            ax.scatter(
                [m.rate_rps for m in mx],
                [float(m.p99_ms or 0.0) for m in mx],
                facecolors="none",
                edgecolors="#d62728",
                label="measured P99",
            )
        ax.set_xlabel("offered rate (req/s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title(f"{curve.name}: predicted latency vs offered load")
        ax.legend(loc="upper left", fontsize=8)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        return buf.getvalue()
    finally:
        plt.close(fig)


def load_curve(data: dict[str, object]) -> LoadCurve:
    """A `LoadCurve.as_dict()` back as a value (the capacity report keeps plain data)."""
    raw = dict(data)
    pts = [CurvePoint(**p) for p in raw.pop("points", [])]  # type: ignore[arg-type, attr-defined]
    return LoadCurve(**raw, points=pts)  # type: ignore[arg-type]


def measured_points(measured: dict[str, Any]) -> list[MeasuredPoint]:
    """Each step (phase) of a load-test run (`measured` of its result.json) as a `MeasuredPoint`:
    its offered rate, P50 and P99."""
    return [
        MeasuredPoint(float(p["offered_rps"]), p.get("p50_ms"), p.get("p99_ms"), f"step {i + 1}")
        for i, p in enumerate(measured.get("phases") or [])
        if p.get("offered_rps") and p.get("requests")
    ]


def overlay_svg(measured: dict[str, Any]) -> str | None:
    """The SVG of the predicted curve a load test recorded (`predicted.curve`) with its measured
    steps on it; None without a curve. The load-test report and the review page both draw it."""
    data = (measured.get("predicted") or {}).get("curve")
    return curve_svg(load_curve(data), measured_points(measured)) if data else None
