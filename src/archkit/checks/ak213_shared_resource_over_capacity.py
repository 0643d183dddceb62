"""AK213: the design rate needs more of a shared processor (cores, GPUs) than it has."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Node


def load_model(ctx: Any) -> Any:
    """The pipeline's demand model, computed once per check run."""
    from archkit.perf.resources import load_model as build

    return ctx.memo("load-model", lambda: build(ctx.spec))


@register
class SharedResourceOverCapacity(Rule):
    """The stages sharing a set of cores or GPUs need more processor time than it has at the design rate."""

    code = "AK213"
    name = "shared-resource-over-capacity"
    source = (
        "seed 000 §4.4 ('supports 1000 QPS' must be proven); the reference service's measured knee "
        "(reference_service/MEASUREMENTS.md): its instances share two cores"
    )
    rationale = """
Instances that share a GPU or a set of cores share its time: two model instances on one GPU
are not two servers, and a detector, two recogniser instances and a gateway on a two-core
machine get two cores between them. archkit adds up the processor time every stage needs
per request on each shared resource (Σ share of requests × items × time per item, at the
batch the batcher forms under load) and compares rate × demand with the resource's cores or
GPUs. Past 100 % the pipeline cannot keep up whatever each stage's own ceiling says; the
resource is the bottleneck (`archkit capacity` prints the pipeline ceiling). Fix: more
replicas or GPUs for that service, fewer instances competing for it, or faster work.
The peak rate is used when it is declared. A resource that only one stage uses is left to
AK206 (that stage's instances, counted as the GPUs or cores they share).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        b = ctx.spec.budgets
        rate = max(x for x in (b.throughput_rps, b.peak_throughput_rps, 0.0) if x is not None)
        if rate <= 0:
            return
        what = "peak" if b.peak_throughput_rps and rate == b.peak_throughput_rps else "design"
        lm = load_model(ctx)
        env = ctx.spec.applied_environment
        for r in lm.resources:
            if r.demand_s <= 0 or rate * r.demand_s < r.units:
                continue
            stages = [s for s in lm.stages if s.resource == r.id and s.demand_s > 0]
            if len(stages) < 2:
                continue  # one stage alone: its own ceiling (AK206) already says it
            parts = ", ".join(f"{s.stage} {1000 * s.demand_s:.1f} ms" for s in stages)
            unit = "core(s)" if r.kind == "cpu" else "GPU(s)"
            units = f"{r.units:g} {unit}"
            if r.id == "machine:cpu" and env is not None and env.cpu_cores and r.units < env.cpu_cores:
                units = f"{env.cpu_cores:g} {unit}, {r.units:g} as the calibration measured them scale"
            obj: Node
            if r.id == "machine:cpu" and env is not None:
                obj, field = env, "cpu_cores"
            else:
                svc = ctx.spec.service(stages[0].service) if stages and stages[0].service else None
                if svc is None:
                    continue
                obj, field = svc, "replicas"
            yield ctx.at(
                obj,
                field,
                f"'{r.id}' ({units}) is {100 * rate * r.demand_s / r.units:.0f} % busy at the "
                f"{what} rate {rate:g} req/s: per request {parts}; the pipeline saturates at "
                f"{r.ceiling_rps:.2f} req/s",
            )
