"""The NVIDIA container-runtime environment a service's container carries (seed 000 §2.3's driver layer).

One definition for the Kubernetes generator (which writes it), AK324 (which judges what a spec
declares) and verify's VK122 (which compares a deployed container with it).
"""

from __future__ import annotations

from archkit.spec.model import NodePool, Service

CAPABILITIES = "NVIDIA_DRIVER_CAPABILITIES"
VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
MIG_CONFIG_DEVICES = "NVIDIA_MIG_CONFIG_DEVICES"
# Seed 000 §2.3 injects `NVIDIA_DRIVER_CAPABILITIES=compute,utility`: compute for CUDA, utility for
# nvidia-smi/NVML, nothing for graphics, so no X11 process can take the GPU. Unset, the container
# toolkit's default applies and an image may set its own (NVIDIA Container Toolkit user guide,
# "Driver capabilities"), so the generator writes it.
DEFAULT_CAPABILITIES = "compute,utility"
# Values that expose no GPU at all (NVIDIA Container Toolkit: `void` or empty behaves as runc;
# `none` mounts the driver without a device).
NO_DEVICES = frozenset({"", "void", "none"})


def gpus_of(svc: Service) -> float:
    """GPUs one replica of `svc` is allocated (its limit, else its request; 0 when none)."""
    return svc.resources.limits.gpu or svc.resources.requests.gpu or 0


def capabilities(value: str) -> list[str]:
    """The capability names of an NVIDIA_DRIVER_CAPABILITIES value, lower-case, in order."""
    return [c.strip().lower() for c in value.split(",") if c.strip()]


def container_env(svc: Service, pool: NodePool | None) -> dict[str, str]:
    """The service's declared env with the NVIDIA defaults a GPU container gets added."""
    env = dict(svc.env)
    if gpus_of(svc):
        # the device plugin sets NVIDIA_VISIBLE_DEVICES to the GPUs it allocates; the capabilities
        # say which driver libraries the container toolkit mounts
        env.setdefault(CAPABILITIES, DEFAULT_CAPABILITIES)
        if pool is not None and pool.gpu is not None and pool.gpu.mig_profile:
            env.setdefault(MIG_CONFIG_DEVICES, "all")
    return env


def nvidia_env(svc: Service, pool: NodePool | None) -> dict[str, str]:
    """The NVIDIA_* part of `container_env`: what a deployed container must carry, exactly."""
    return {k: v for k, v in container_env(svc, pool).items() if k.startswith("NVIDIA_")}
