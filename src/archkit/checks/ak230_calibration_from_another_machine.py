"""AK230: an environment's calibration was measured on another machine than its target."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class CalibrationFromAnotherMachine(Rule):
    """The calibration's recorded machine differs from the one it predicts for: recalibrate."""

    code = "AK230"
    name = "calibration-from-another-machine"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (measure on the real server before attributing latency); issue 29"
    rationale = """
A calibration's service times hold on the machine that measured them. The OCR reference
service runs its models in bf16 on an AVX-512 BF16 CPU and in f32 on an AVX2-only one, 2-3x
slower, and both call themselves `AMD EPYC` with 2 cores: a prediction from the other
machine's calibration missed the measured P50 by 60 %. `archkit calibrate` records a
fingerprint (CPU name, family/model, the ISA features that select kernels — avx2, avx512f,
avx512_bf16, avx512_vnni, AMX —, cores, GPUs with MIG profile, driver and CUDA, the serving
runtime, backend, precision and package versions). It is held against the target: this
machine when the environment is applied (`--env`) and the load-test target is on loopback,
otherwise the environment's declared `hardware`, `cpu_cores` and `device`. The finding names
both machines and the command that recalibrates on the target.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.calibrate.origin import mismatches

        for m in mismatches(ctx.spec, ctx.file):
            yield ctx.at(m.spec_path, None, m.message())
