"""The `locust` generator: locust/locustfile.py with the spec's traffic mix, payloads and levels."""

from __future__ import annotations

from archkit.analysis.loadplan import stress_steps
from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register
from archkit.spec.model import Level, Spec


def _payload(sc) -> list[tuple[str, str]] | None:
    p = sc.payload
    if p is None:
        return None
    out: list[tuple[str, str]] = []
    if p.file is not None:
        out.append(("file", p.file))
    elif p.folder is not None:
        out += [("folder", p.folder), ("glob", p.glob)]
    elif p.template is not None:
        out.append(("template", p.template))
    if p.content_type:
        out.append(("content_type", p.content_type))
    return out or None


def _level(level: Level, spec: Spec) -> dict:
    design = spec.budgets.throughput_rps
    steps = stress_steps(level, design) if level.kind == "stress" else []
    rate = steps[0][1] if steps else (level.rate_rps or design)
    return {"id": level.id, "kind": level.kind, "users": level.users, "rate_rps": rate,
            "duration_s": level.duration_s, "steps": steps}


@register("locust", order=60)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Locust scenarios: the traffic mix with weights, payloads and levels, usable with plain `locust`."""
    lt = ctx.spec.loadtest
    if lt is None:
        return {}
    scenarios = [{
        "id": sc.id, "weight": sc.weight, "method": sc.method, "path": sc.path,
        "headers": sorted(sc.headers.items()), "payload": _payload(sc),
        "expect_status": sc.expect_status, "model": sc.model,
        "inputs": sc.inputs, "outputs": sc.outputs,
    } for sc in lt.scenarios]
    text = render("locust/locustfile.py.j2", ctx.templates_dir, header=ctx.header("#"),
                  service=ctx.spec.metadata.name, protocol=lt.target.protocol, host=lt.target.host,
                  scenarios=scenarios, timeout_s=(ctx.spec.controlflow.timeout_ms or 30000.0) / 1000.0,
                  levels=[_level(lv, ctx.spec) for lv in lt.levels])
    return {"locust/locustfile.py": text}
