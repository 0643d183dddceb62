"""The budget judge: measured statistics against the spec's budgets, one verdict per budget.

Budget kinds (seed 000 §4.4: a spec is signed only after three levels of load test pass):
- end to end: `budgets.p50_ms/p95_ms/p99_ms` (upper bounds on every request's latency),
  `budgets.error_rate` (upper bound), `budgets.throughput_rps` (the design rate must be
  sustained: achieved ≥ (1 - THROUGHPUT_TOLERANCE) × budget; judged only when the offered
  rate reached the budget);
- per scenario: `loadtest.scenarios[].p50_ms/p95_ms/p99_ms`;
- per stage: `dataflow.stages[].p50_ms/p95_ms/p99_ms` against the server's own stage
  histograms (bucket-interpolated, like PromQL's histogram_quantile);
- stress: the knee (highest throughput whose step met the p99 and error budgets) must reach
  `budgets.peak_throughput_rps` (else `throughput_rps`);
- chaos: per fault, the declared fallback answered and the service recovered before the end.
Percentiles come from HDR histograms of every request (exact to 0.1%), never locust's rounded stats.

A percentile budget is judged on its sample count and the percentile's distribution-free 95 %
interval (`archkit.orderstats`): met when the whole interval is within the budget,
missed when the whole interval is beyond it, and otherwise **inconclusive** — neither met nor
missed — with the run length (at this level's rate) that would decide it. A P99 from fewer than
368 samples is always inconclusive: it is the largest of a few draws, not a verdict.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from archkit.orderstats import FORECAST_MAX_FACTOR, decide
from archkit.spec.model import Spec

THROUGHPUT_TOLERANCE = 0.05  # pacing jitter: 5% below the design rate still counts as sustained
PCTS = ("p50_ms", "p95_ms", "p99_ms")


@dataclass
class Verdict:
    """One budget beside its measurement."""

    id: str  # e.g. "end_to_end.p99_ms", "scenario.work.p95_ms", "stress.knee_rps"
    scope: str
    metric: str
    op: str  # "<=" or ">="
    budget: float | None
    measured: float | None
    unit: str
    passed: bool | None  # None: not judged or inconclusive (see why)
    why: str
    spec_path: tuple = ()
    samples: int | None = None  # a percentile's sample count
    interval: tuple[float | None, float | None] | None = None  # its 95 % interval (None: unbounded)
    inconclusive: bool = False  # the interval straddles the budget or the samples are too few
    decide_s: float | None = None  # inconclusive: about how long a run at this rate would decide it

    @property
    def outcome(self) -> str:
        """pass, fail, inconclusive or not judged."""
        if self.inconclusive:
            return "inconclusive"
        return {True: "pass", False: "fail", None: "not judged"}[self.passed]

    def to_json(self) -> dict:
        d = asdict(self)
        d["spec_path"] = list(self.spec_path)
        d["outcome"] = self.outcome
        return d


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "nothing measured"
    if unit == "ratio":
        return f"{v * 100:.3g}%"
    return f"{v:.0f} {unit}" if abs(v) >= 1000 else f"{v:.4g} {unit}"


def upper_bound(
    vid: str,
    scope: str,
    metric: str,
    budget: float | None,
    measured: float | None,
    unit: str,
    path: tuple,
    what: str,
    ci: dict | None = None,
    duration_s: float | None = None,
    stat: str | None = None,
) -> Verdict | None:
    """An upper budget beside its measurement; a percentile with its interval (`ci`) is judged on it.

    `stat` names the percentile ("p99_ms") where `metric` is a budget field that does not start
    with it (an llm stage's `ttft_p99_ms`).
    """
    if budget is None:
        return None
    if measured is None:
        return Verdict(
            vid,
            scope,
            metric,
            "<=",
            budget,
            None,
            unit,
            False,
            f"{what}: no requests measured, so the budget of {_fmt(budget, unit)} is not met",
            path,
        )
    if ci is None:  # no sample count came with the number (an old measurement): its value alone
        ok = measured <= budget
        why = f"{what} {_fmt(measured, unit)} {'≤' if ok else '>'} budget {_fmt(budget, unit)}" + (
            "" if ok else f" (over by {_fmt(measured - budget, unit)})"
        )
        if (stat or metric) in PCTS:  # a percentile without its sample count (an older measurement)
            why += " (sample count unknown)"
        return Verdict(vid, scope, metric, "<=", budget, measured, unit, ok, why, path)
    return _percentile(vid, scope, stat or metric, budget, measured, unit, path, what, ci, duration_s, metric)


def _interval_text(ci: dict, unit: str) -> str:
    lo, hi = ci.get("lo_ms"), ci.get("hi_ms")
    left = "(−∞" if lo is None else f"[{_fmt(lo, unit)}"
    right = "∞)" if hi is None else f"{_fmt(hi, unit)}]"
    return f"{ci['confidence']:.0%} interval {left}, {right} from {ci['n']} samples"


def _percentile(vid, scope, stat, budget, measured, unit, path, what, ci, duration_s, metric) -> Verdict:
    """A percentile budget judged on its order-statistics interval: met, missed or inconclusive."""
    ok, decide_n = decide(budget, ci)
    n = ci["n"]
    span = (ci.get("lo_ms"), ci.get("hi_ms"))
    where = _interval_text(ci, unit)
    if ok is not None:
        why = f"{what} {_fmt(measured, unit)} {'≤' if ok else '>'} budget {_fmt(budget, unit)}" + (
            "" if ok else f" (over by {_fmt(measured - budget, unit)})"
        )
        return Verdict(vid, scope, metric, "<=", budget, measured, unit, ok, f"{why}; {where}", path, n, span)
    if n < ci["min_n"]:
        reason = f"too few samples for a {stat[:3].upper()} (it needs {ci['min_n']})"
    else:
        reason = f"the interval straddles the budget {_fmt(budget, unit)}"
    decide_s = None
    if decide_n is None:
        more = f"no run up to {FORECAST_MAX_FACTOR:g}× as long would decide it at these values"
    else:
        decide_s = round(duration_s * decide_n / n, 1) if duration_s else None
        more = f"about {decide_n} samples would decide it" + (
            f" (~{decide_s:g} s at this level's rate)" if decide_s else ""
        )
    why = f"inconclusive: {what} {_fmt(measured, unit)}, {where}: {reason}; {more}"
    return Verdict(vid, scope, metric, "<=", budget, measured, unit, None, why, path, n, span, True, decide_s)


def judge(spec: Spec, measured: dict) -> list[Verdict]:
    """Verdicts for every budget the spec declares that this run can judge.

    `measured`: {"kind", "offered_rps", "end_to_end": {p50_ms, ..., error_rate, throughput_rps},
    "scenarios": {id: {...}}, "stages": {id: {...}}, "stress": {"knee_rps"}, "chaos": [fault results]}.
    """
    out: list[Verdict | None] = []  # upper_bound/_lower give None for a budget not declared; dropped below
    b = spec.budgets
    e2e = measured.get("end_to_end") or {}
    kind = measured.get("kind", "baseline")
    dur = measured.get("duration_s")
    bp = tuple(b.spec_path) or ("budgets",)
    if kind in ("baseline", "chaos"):
        # A chaos run's percentiles include the injected faults: judged at baseline only.
        if kind == "baseline":
            for m in PCTS:
                out.append(
                    upper_bound(
                        f"end_to_end.{m}",
                        "end_to_end",
                        m,
                        getattr(b, m),
                        e2e.get(m),
                        "ms",
                        bp + (m,),
                        f"end-to-end {m[:3].upper()}",
                        (e2e.get("ci") or {}).get(m),
                        dur,
                    )
                )
            out.append(
                upper_bound(
                    "end_to_end.error_rate",
                    "end_to_end",
                    "error_rate",
                    b.error_rate,
                    e2e.get("error_rate"),
                    "ratio",
                    bp + ("error_rate",),
                    "error rate",
                )
            )
            out.append(
                _throughput(
                    b.throughput_rps,
                    e2e.get("throughput_rps"),
                    measured.get("offered_rps"),
                    bp + ("throughput_rps",),
                )
            )
            for sc in spec.loadtest.scenarios if spec.loadtest else []:
                got = (measured.get("scenarios") or {}).get(sc.id, {})
                for m in PCTS:
                    out.append(
                        upper_bound(
                            f"scenario.{sc.id}.{m}",
                            f"scenario {sc.id}",
                            m,
                            getattr(sc, m),
                            got.get(m),
                            "ms",
                            tuple(sc.spec_path) + (m,),
                            f"scenario {sc.id} {m[:3].upper()}",
                            (got.get("ci") or {}).get(m),
                            dur,
                        )
                    )
            for st in spec.dataflow.stages:
                got = (measured.get("stages") or {}).get(st.id)
                if not got:
                    continue  # no server-side series for this stage: nothing to judge it on
                for m in PCTS:
                    if got.get(m) is None:
                        continue
                    out.append(
                        upper_bound(
                            f"stage.{st.id}.{m}",
                            f"stage {st.id}",
                            m,
                            getattr(st, m),
                            got.get(m),
                            "ms",
                            tuple(st.spec_path) + (m,),
                            f"stage {st.id} server-side {m[:3].upper()}",
                            (got.get("ci") or {}).get(m),
                            dur,
                        )
                    )
        if kind == "chaos":
            for i, f in enumerate(measured.get("chaos") or []):
                out += _chaos(i, f)
    elif kind == "stress":
        target = b.peak_throughput_rps or b.throughput_rps
        key = "peak_throughput_rps" if b.peak_throughput_rps else "throughput_rps"
        knee = (measured.get("stress") or {}).get("knee_rps")
        if target is not None:
            ok = knee is not None and knee >= target * (1 - THROUGHPUT_TOLERANCE)
            text = (
                "no step met the P99 and error budgets: there is no knee"
                if knee is None
                else f"knee (highest throughput within budgets) {knee:.4g} req/s "
                f"{'≥' if ok else '<'} {key} {target:.4g} req/s"
            )
            out.append(
                Verdict(
                    "stress.knee_rps",
                    "stress",
                    "knee_rps",
                    ">=",
                    target,
                    knee,
                    "req/s",
                    ok,
                    text,
                    bp + (key,),
                )
            )
    return [v for v in out if v is not None]


def _throughput(budget, achieved, offered, path) -> Verdict | None:
    if budget is None:
        return None

    def verdict(measured, ok, message) -> Verdict:
        return Verdict(
            "end_to_end.throughput_rps",
            "end_to_end",
            "throughput_rps",
            ">=",
            budget,
            measured,
            "req/s",
            ok,
            message,
            path,
        )

    if offered is not None and offered < budget * 0.999:
        return verdict(
            achieved,
            None,
            f"not judged: the offered rate {offered:.4g} req/s is below the design "
            f"rate {budget:.4g} req/s (run with --rate {budget:g})",
        )
    if achieved is None:
        return verdict(None, False, "no successful requests")
    floor = budget * (1 - THROUGHPUT_TOLERANCE)
    ok = achieved >= floor
    return verdict(
        achieved,
        ok,
        f"throughput {achieved:.4g} req/s {'≥' if ok else '<'} {floor:.4g} req/s "
        f"(design rate {budget:.4g} less {THROUGHPUT_TOLERANCE:.0%} pacing tolerance)",
    )


def _chaos(i: int, f: dict) -> list[Verdict]:
    out = []
    path = tuple(f.get("spec_path") or ())
    label = f"fault {i + 1} ({f.get('action')} {f.get('target')})"
    if f.get("expect_fallback"):
        seen, status = f.get("fallback_answers"), f.get("fallback_status")
        if status is None:
            out.append(
                Verdict(
                    f"chaos.{i}.fallback",
                    label,
                    "fallback_answers",
                    ">=",
                    1,
                    seen,
                    "responses",
                    None,
                    f"not judged: fallback {f['expect_fallback']} has no distinct status to recognise",
                    path + ("expect_fallback",),
                )
            )
        else:
            ok = bool(seen)
            out.append(
                Verdict(
                    f"chaos.{i}.fallback",
                    label,
                    "fallback_answers",
                    ">=",
                    1,
                    seen or 0,
                    "responses",
                    ok,
                    f"fallback {f['expect_fallback']} (status {status}) answered {seen or 0} "
                    f"time(s) during the fault",
                    path + ("expect_fallback",),
                )
            )
    if not f.get("applied", True):
        out.append(
            Verdict(
                f"chaos.{i}.applied",
                label,
                "applied",
                ">=",
                1,
                0,
                "",
                False,
                f"the fault could not be applied: {f.get('error', '?')}",
                path,
            )
        )
        return out
    rec = f.get("recovery_s")
    out.append(
        Verdict(
            f"chaos.{i}.recovered",
            label,
            "recovery_s",
            "<=",
            None,
            rec,
            "s",
            rec is not None,
            f"recovered {rec:.3g} s after the fault ended"
            if rec is not None
            else "errors or latency had not recovered by the end of the run",
            path,
        )
    )
    return out


def passed(verdicts: list[Verdict], strict: bool = False) -> bool:
    """No budget missed; with `strict`, no budget inconclusive either."""
    return all(v.passed is not False and not (strict and v.inconclusive) for v in verdicts)


def inconclusive(verdicts: list[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.inconclusive]
