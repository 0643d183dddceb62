"""AK325: a service's declared CUDA differs from the CUDA its image or framework build locks, or its driver is too old."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.runtime import MIN_DRIVER, framework_cuda, image_cuda, major_minor, version_tuple


@register
class RuntimeVersionMismatch(Rule):
    """The CUDA a service declares is not the CUDA its image tag or its framework build locks; or its driver cannot run it."""

    code = "AK325"
    name = "runtime-version-mismatch"
    source = "seed 000 §4.1 (the CUDA drawn is the CUDA the image locks; key package versions asserted after install)"
    rationale = """
Seed 000 §4.1 draws "Python 3.9 + PyTorch 2.0 + CUDA 11.8" on the diagram and makes it true in the
Dockerfile: an official NVIDIA base pinned to a release (whose tag fixes the CUDA), and a
`python -c "assert torch.__version__ == '2.0.1+cu118'"` after `pip install`, because a
`pip install torch` that brought a CUDA 12.1 build into the CUDA 11.8 image stopped Triton from
loading the model. `runtime.cuda` is compared (major.minor) with the CUDA the image's tag locks
(NGC `YY.MM` releases from NVIDIA's release notes, `nvidia/cuda:X.Y.Z`, a `cudaX.Y` tag) and with
the framework's pip local version (`+cu118`); `runtime.driver` with the oldest driver of that
CUDA major (CUDA minor-version compatibility: 450.80.02 for 11.x, 525.60.13 for 12.x).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            rt = svc.runtime
            if rt is None:
                continue
            locked = image_cuda(svc.image) if svc.image else None
            if rt.cuda and locked and major_minor(locked[0]) != major_minor(rt.cuda):
                yield ctx.at(
                    rt,
                    "cuda",
                    f"service '{svc.id}' declares CUDA {rt.cuda} but its image '{svc.image}' ships CUDA "
                    f"{locked[0]} ({locked[1]})",
                )
            built = framework_cuda(rt.framework) if rt.framework else None
            want = rt.cuda or (locked[0] if locked else None)
            if built and want and major_minor(built) != major_minor(want):
                whose = "the service declares" if rt.cuda else "its image ships"
                yield ctx.at(
                    rt,
                    "framework",
                    f"service '{svc.id}' framework {rt.framework} is built for CUDA {built} but {whose} "
                    f"CUDA {want}: the framework will not load its kernels",
                )
            cuda = want or built
            if rt.driver and cuda:
                floor = MIN_DRIVER.get(major_minor(cuda)[0])
                if floor and version_tuple(rt.driver) < version_tuple(floor):
                    yield ctx.at(
                        rt,
                        "driver",
                        f"service '{svc.id}' runs CUDA {cuda} on driver {rt.driver}, older than "
                        f"{floor}, the oldest that runs CUDA {major_minor(cuda)[0]}.x",
                    )
