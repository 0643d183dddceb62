"""The `k6` generator: the load-test plan as k6/script.js (seed 000 §4.4 proves capacity with k6).

The same plan the locustfile renders (`archkit.plans.loadtest`): one k6 scenario per spec
scenario, its share of the level's rate given by its weight; baseline and stress levels are the
open model (`constant-arrival-rate`, stress steps as `ramping-arrival-rate`), closed levels (chaos
by default) keep `users` virtual users busy (`constant-vus`). Thresholds are the spec's budgets
on the levels the budget judge judges them (baseline): end-to-end P50/P95/P99 and error rate, each
scenario's own percentiles. `k6 inspect` accepts the script; `archkit loadtest --engine k6` runs
it with the real binary and judges its measurements like a locust run.
"""

from __future__ import annotations

import json
import math
from typing import Any

from archkit import engines
from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register
from archkit.plans.loadtest import LevelPlan, LoadTestPlan, ScenarioPlan
from archkit.spec.model import Spec, TritonInput

# budgets.* -> the k6 trend statistic that measures it
_PCTS = (("p50_ms", "p(50)"), ("p95_ms", "p(95)"), ("p99_ms", "p(99)"))
_MAX_ZEROS = 1 << 20  # a warm-up body larger than a million zeros is not a load-test payload


def _js(value: Any) -> str:
    """A JSON literal (valid JavaScript), ASCII only, keys sorted: deterministic bytes."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True, indent=2)


def _triton_body(inputs: tuple[TritonInput, ...]) -> str:
    """A KServe v2 inference request with zero-filled inputs (variable dimensions at 1)."""
    body = []
    for inp in inputs:
        shape = [d if d > 0 else 1 for d in inp.shape] or [1]
        n = min(math.prod(shape), _MAX_ZEROS)
        zero: Any = (
            "" if inp.datatype.upper() == "BYTES" else (False if inp.datatype.upper() == "BOOL" else 0)
        )
        body.append({"name": inp.name, "shape": shape, "datatype": inp.datatype, "data": [zero] * n})
    return json.dumps({"inputs": body}, separators=(",", ":"), sort_keys=True)


def _scenario(plan: LoadTestPlan, sc: ScenarioPlan, total_weight: float) -> dict[str, Any]:
    payload = dict(sc.payload or ())
    out: dict[str, Any] = {
        "share": sc.weight / total_weight,
        "method": sc.method,
        "headers": dict(sc.headers),
        "expect_status": list(sc.expect_status),
    }
    if plan.protocol == "triton-http" and sc.model:
        infer = engines.adapter("triton").endpoints.infer or ""
        out["path"] = sc.path or infer.format(model=sc.model)
        out["body"] = _triton_body(sc.inputs)
        out["headers"].setdefault("Content-Type", "application/json")
    else:
        out["path"] = sc.path or "/"
        if "template" in payload:
            out["body"] = payload["template"]
        elif "file" in payload:
            out["files"] = [payload["file"]]  # read from ARCHKIT_BASE when the script starts
        elif "folder" in payload:
            out["folder"] = f"{payload['folder']}/{payload.get('glob', '*')}"  # files: ARCHKIT_PAYLOADS
    if "content_type" in payload:
        out["headers"].setdefault("Content-Type", payload["content_type"])
    return out


def _level(lv: LevelPlan, arrival: str | None) -> dict[str, Any]:
    closed = (arrival or ("closed" if lv.kind == "chaos" else "constant")) == "closed"
    out: dict[str, Any] = {
        "kind": lv.kind,
        "users": lv.users,
        "duration_s": lv.duration_s,
        "model": "closed" if closed or lv.rate_rps is None else "open",
        "rate_rps": lv.rate_rps,
    }
    if lv.steps:
        out["steps"] = [[start, rate] for start, rate in lv.steps]
    return out


def _thresholds(spec: Spec, plan: LoadTestPlan) -> dict[str, list[str]]:
    """The budgets as k6 thresholds (what `judge` checks at a baseline level)."""
    b, out = spec.budgets, {}
    e2e = [f"{stat}<={getattr(b, key):g}" for key, stat in _PCTS if getattr(b, key) is not None]
    if e2e:
        out["http_req_duration"] = e2e
    if b.error_rate is not None:
        out["http_req_failed"] = [f"rate<={b.error_rate:g}"]
    for sc in spec.loadtest.scenarios if spec.loadtest else []:
        own = [f"{stat}<={getattr(sc, key):g}" for key, stat in _PCTS if getattr(sc, key) is not None]
        if own:
            out[f"http_req_duration{{scenario:{sc.id}}}"] = own
    return out


def k6_data(spec: Spec, plan: LoadTestPlan) -> dict[str, Any]:
    """What the script embeds: the mix, the levels and the thresholds (also read by the k6 runner)."""
    total = sum(sc.weight for sc in plan.scenarios) or 1.0
    arrivals = {lv.id: lv.arrival for lv in spec.loadtest.levels} if spec.loadtest else {}
    return {
        "mix": {sc.id: _scenario(plan, sc, total) for sc in plan.scenarios},
        "levels": {lv.id: _level(lv, arrivals.get(lv.id)) for lv in plan.levels},
        "thresholds": _thresholds(spec, plan),
    }


@register(
    "k6",
    order=61,
    source="seed 000 §4.4 (capacity proved by k6 code with a P95 threshold at three levels)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """k6 script: the traffic mix as k6 scenarios, open-model arrival rates per level, budgets as thresholds."""
    plan = ctx.plans.load_test
    if plan is None or plan.protocol == "triton-grpc" or not plan.scenarios:
        return {}  # k6's gRPC client needs the service's .proto; the locustfile covers triton-grpc
    data = k6_data(ctx.spec, plan)
    text = render(
        "k6/script.js.j2",
        ctx.templates_dir,
        header=ctx.header("//"),
        host=json.dumps(plan.host),
        timeout_s=plan.timeout_s,
        mix=_js(data["mix"]),
        levels=_js(data["levels"]),
        thresholds=_js(data["thresholds"]),
        first_level=json.dumps(plan.levels[0].id if plan.levels else "baseline"),
    )
    return {"k6/script.js": text}
