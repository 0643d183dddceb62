"""The `locust` generator: renders the load-test plan as locust/locustfile.py (mix, payloads, levels).

What is sent, how often and at which rates is the load-test plan (`archkit.plans.loadtest`,
computed once per run); this module only renders it.
"""

from __future__ import annotations

from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register


@register(
    "locust",
    order=60,
    source="seed 000 §4.4 (baseline, destructive and chaos levels in load-test code)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Locust scenarios: the traffic mix with weights, payloads and levels, usable with plain `locust`."""
    plan = ctx.plans.load_test
    if plan is None:
        return {}
    text = render(
        "locust/locustfile.py.j2",
        ctx.templates_dir,
        header=ctx.header("#"),
        service=ctx.spec.metadata.name,
        protocol=plan.protocol,
        host=plan.host,
        scenarios=plan.scenarios,
        timeout_s=plan.timeout_s,
        levels=plan.levels,
    )
    return {"locust/locustfile.py": text}
