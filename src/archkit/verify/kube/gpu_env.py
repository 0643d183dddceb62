"""A service's NVIDIA driver environment (VK122): the container carries the NVIDIA_* env the spec implies."""

from __future__ import annotations

from archkit.spec.gpu_env import VISIBLE_DEVICES, nvidia_env
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.registry import Code


class GpuDriverEnv(ServiceCheck):
    """The container's NVIDIA_* env equals the spec's (its env, and compute,utility on a GPU service)."""

    code = Code(
        "VK122",
        "NVIDIA driver env",
        "The deployed container sets NVIDIA_DRIVER_CAPABILITIES as `archkit render` writes it "
        "(compute,utility unless the spec says otherwise) and no NVIDIA_* variable the spec does not "
        "declare, such as a hand-set NVIDIA_VISIBLE_DEVICES that bypasses the device plugin.",
        "seed 000 §2.3 (driver layer of GPU isolation)",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, svc = ctx.rec, t.svc
        want = nvidia_env(svc, t.pool)
        have: dict[str, str | None] = {}
        for e in t.c.get("env") or []:
            name = str(e.get("name", ""))
            if name.startswith("NVIDIA_"):
                value = e.get("value")
                have[name] = None if "valueFrom" in e else ("" if value is None else str(value))
        if not want and not have:
            return
        problems, unsure = [], []
        for key, value in sorted(want.items()):
            if key not in have:
                if t.c.get("envFrom"):
                    unsure.append(f"{key} is not set inline and envFrom may set it")
                else:
                    problems.append(f"sets no {key} (the spec's {key}={value}; unset, the image decides)")
            elif have[key] is None:
                unsure.append(f"{key} comes from valueFrom")
            elif have[key] != value:
                problems.append(f"{key} is '{have[key]}', the spec's is '{value}'")
        for key in sorted(set(have) - set(want)):
            extra = f"sets {key}={have[key] if have[key] is not None else '(valueFrom)'}, which the spec does not declare"
            if key == VISIBLE_DEVICES:
                extra += ": it bypasses the GPUs the device plugin allocates"
            problems.append(extra)
        if problems:
            report, message = r.drift, f"service '{svc.id}' " + "; ".join(problems)
        elif unsure:
            report, message = r.unknown, f"service '{svc.id}': " + "; ".join(unsure)
        else:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(want.items()))
            report, message = r.ok, f"NVIDIA env as declared ({shown})"
        report(self.code, t.label, svc, message, field="env", where=t.where)
