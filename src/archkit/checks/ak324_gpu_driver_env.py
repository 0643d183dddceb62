"""AK324: a service's NVIDIA driver environment exposes more than CUDA needs, or GPUs it was not given."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.gpu_env import CAPABILITIES, NO_DEVICES, VISIBLE_DEVICES, capabilities, gpus_of


@register
class GpuDriverEnv(Rule):
    """A GPU service's NVIDIA_DRIVER_CAPABILITIES goes beyond compute,utility, or NVIDIA_VISIBLE_DEVICES is set by hand."""

    code = "AK324"
    name = "gpu-driver-env"
    severity = Severity.WARNING
    source = (
        "seed 000 §2.3 (driver layer: NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES=compute,utility)"
    )
    rationale = """
Seed 000 §2.3 isolates GPU tenants in three layers; the driver layer injects
`NVIDIA_VISIBLE_DEVICES` and `NVIDIA_DRIVER_CAPABILITIES=compute,utility` when the container
starts, so that graphics capabilities stay off and no X11 process can take the GPU. A
capability list with `all`, `graphics` or `display` undoes that; one without `compute` cannot
run CUDA. On Kubernetes the device plugin sets `NVIDIA_VISIBLE_DEVICES` to the GPUs it
allocated: a hand-set value (`all`, `0,1`) on a GPU service reaches GPUs the scheduler gave to
other pods, and on a service with no GPU it reaches GPUs outside every count (the NVIDIA
device plugin's `accept-nvidia-visible-devices-envvar-when-unprivileged` exists to refuse
this). `Settings.allowed_capabilities` admits e.g. `video` for a decoding pipeline.
"""

    class Settings(RuleSettings):
        allowed_capabilities: list[str] = Field(
            default_factory=lambda: ["compute", "utility"],
            description="seed 000 §2.3: compute,utility; add 'video' for an NVDEC/NVENC pipeline",
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        allowed = [c.lower() for c in ctx.settings(self.Settings).allowed_capabilities]
        for svc in ctx.spec.topology.services:
            if svc.external:
                continue
            gpus = gpus_of(svc)
            caps = svc.env.get(CAPABILITIES)
            if gpus and caps is not None:
                names = capabilities(caps)
                extra = [c for c in names if c not in allowed]
                if extra:
                    yield ctx.at(
                        svc.spec_path + ("env", CAPABILITIES),
                        None,
                        f"service '{svc.id}' sets {CAPABILITIES}={caps}: '{', '.join(extra)}' goes beyond "
                        f"{','.join(allowed)} (seed 000 §2.3 keeps graphics off the GPU)",
                    )
                elif "compute" not in names:
                    yield ctx.at(
                        svc.spec_path + ("env", CAPABILITIES),
                        None,
                        f"service '{svc.id}' sets {CAPABILITIES}={caps} without 'compute': CUDA cannot run",
                    )
            devices = svc.env.get(VISIBLE_DEVICES)
            if devices is None or devices.strip().lower() in NO_DEVICES:
                continue
            if gpus:
                why = (
                    f"the device plugin sets it to the {gpus:g} GPU(s) it allocates; a hand-set value "
                    "reaches GPUs the scheduler gave to other pods"
                )
            else:
                why = "the service is allocated no GPU, so these GPUs are outside every scheduler count"
            yield ctx.at(
                svc.spec_path + ("env", VISIBLE_DEVICES),
                None,
                f"service '{svc.id}' sets {VISIBLE_DEVICES}={devices}: {why}",
                severity=Severity.ERROR,
            )
