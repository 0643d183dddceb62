"""AK318: a MIG profile the pool's GPU model does not offer."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.llm_catalogue import accelerator


@register
class MigProfileInvalid(Rule):
    """A node pool names a MIG profile that its GPU model cannot be partitioned into."""

    code = "AK318"
    name = "mig-profile-invalid"
    source = "seed 000 §2.3 (MIG partitions as the hardware isolation layer); NVIDIA MIG user guide (docs/sources.md G10)"
    rationale = """
Seed 000 §2.3 isolates tenants with MIG instances. A profile is a fixed slice of one GPU
model: an A100 80GB offers 1g.10gb … 7g.80gb, an H200 1g.18gb … 7g.141gb, while A10, A10G,
L4, L40S and T4 have no MIG at all. A profile the GPU does not offer is a design that cannot
be scheduled (the device plugin never advertises `nvidia.com/mig-<profile>`). GPU models
missing from the catalogue are not judged; `archkit explain AK318` lists the profiles known.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for pool in ctx.spec.topology.node_pools:
            g = pool.gpu
            if g is None or not g.mig_profile:
                continue
            acc = accelerator(g.model)
            if acc is None or acc.kind != "gpu":
                continue
            if not acc.mig_profiles:
                yield ctx.at(
                    g,
                    "mig_profile",
                    f"pool '{pool.id}': {acc.name} GPUs have no MIG, so no '{g.mig_profile}'",
                )
            elif acc.mig(g.mig_profile) is None:
                offered = ", ".join(p.name for p in acc.mig_profiles)
                yield ctx.at(
                    g,
                    "mig_profile",
                    f"pool '{pool.id}': {acc.name} offers no MIG profile '{g.mig_profile}' (it has {offered})",
                )
