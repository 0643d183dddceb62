"""An AVX2-only CPU for issue 34: the QEMU guest of bench/avx2_guest.sh and what the service
chooses on it.

The flag set below is the guest's own /proc/cpuinfo (`-cpu EPYC-Rome`, 2026-12-03), not a
hand-written one: what an AVX2-only CPU model really offers a guest (AVX2, FMA, no AVX-512, no
AVX-VNNI, no BF16). The live test boots the guest (under TCG, which needs no KVM: it checks
the CPU the guest sees, not its speed).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reference_service.runtimes import BF16_FLAGS, choose_precision, cpu_flags

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_ocr  # noqa: E402  (bench/ is not a package)

# The guest's /proc/cpuinfo "flags" line, read with the service's own parser.
EPYC_ROME_GUEST = cpu_flags(
    "flags\t\t: fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
    "sse2 ht syscall nx mmxext pdpe1gb rdtscp lm rep_good nopl cpuid extd_apicid pni pclmulqdq monitor "
    "ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy "
    "svm cr8_legacy abm sse4a 3dnowprefetch ssbd vmmcall fsgsbase bmi1 avx2 smep bmi2 adx smap "
    "clflushopt clwb xsaveopt xgetbv1 arat npt umip\n"
)


def test_the_guest_cpu_is_avx2_only_and_the_service_picks_int8_there():
    assert "avx2" in EPYC_ROME_GUEST and "fma" in EPYC_ROME_GUEST
    assert not {f for f in EPYC_ROME_GUEST if f.startswith("avx512") or "vnni" in f}
    assert not EPYC_ROME_GUEST & BF16_FLAGS
    # The measured choice without bf16 (runtimes.NO_BF16_MEASURED): int8 when its files exist,
    # else f32; forcing still wins (OCR_PRECISION).
    assert choose_precision(EPYC_ROME_GUEST, int8_ready=True) == "int8"
    assert choose_precision(EPYC_ROME_GUEST, int8_ready=False) == "f32"
    assert choose_precision(EPYC_ROME_GUEST, int8_ready=True, forced="f32") == "f32"


@pytest.mark.parametrize(
    ("lscpu", "want"),
    [
        (
            "Model name: AMD EPYC-Rome Processor\nCPU family: 23\nModel: 49\n",
            "AMD EPYC-Rome Processor (CPU family 23 model 49, QEMU CPU model: a guest's CPUID on "
            "another host's cores, not that part)",
        ),
        (
            "Model name: Intel Xeon Processor (Icelake)\nCPU family: 6\nModel: 134\n",
            "Intel Xeon Processor (Icelake) (CPU family 6 model 134, QEMU CPU model: a guest's CPUID on "
            "another host's cores, not that part)",
        ),
        (
            "Model name: AMD EPYC 7B12 64-Core Processor\nCPU family: 23\nModel: 49\n",
            "AMD EPYC 7B12 64-Core Processor (CPU family 23 model 49, Zen 1/2)",
        ),
        ("Model name: AMD EPYC\nCPU family: 26\nModel: 2\n", "AMD EPYC (CPU family 26 model 2, Zen 5)"),
    ],
)
def test_benchmark_titles_name_a_qemu_cpu_model_as_a_guest(lscpu, want):
    """A section measured in the guest must not read as if it ran on a Zen 2 part."""
    assert bench_ocr.cpu_model(lscpu) == want


@pytest.mark.live
@pytest.mark.skipif(
    not (shutil.which("qemu-system-x86_64") and shutil.which("busybox")),
    reason="needs apt packages qemu-system-x86 and busybox-static",
)
def test_the_guest_offers_avx2_and_no_avx512(tmp_path):
    """Boots the guest under TCG (about a minute of CPU) and reads its CPU from inside."""
    out = tmp_path / "out"
    res = subprocess.run(
        [str(ROOT / "bench" / "avx2_guest.sh"), "--accel", "tcg", "--mem", "1G", "--out", str(out)]
        + ["--", "sh", "-c", "grep -m1 '^flags' /proc/cpuinfo > " + str(out / "flags.txt")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    flags = cpu_flags((out / "flags.txt").read_text())
    assert flags == cpu_flags((out / "guest-cpuinfo.txt").read_text())  # the command ran inside
    assert "avx2" in flags and not {f for f in flags if f.startswith("avx512")}
    assert choose_precision(flags, int8_ready=True) == "int8"


def test_outputs_are_held_to_the_recorded_ones_within_the_rollback_tolerances():
    """verify-rollback's comparison, which bench/avx2_guest_check.py applies to the guest's
    outputs: text exactly but for trailing whitespace, boxes within 3 px, confidences within 0.02 (hand-built cases)."""
    from reference_service.verify_rollback import differences

    want = {
        "text": "Total 5031.99",
        "lines": [{"box": [[0, 0], [10, 0], [10, 5], [0, 5]], "confidence": 0.95}],
    }
    near = {
        "text": "Total 5031.99",
        "lines": [{"box": [[3, 0], [10, 0], [10, 5], [0, 2]], "confidence": 0.94}],
    }
    assert differences(near, want) == []
    far = {"text": "Total 5031.99", "lines": [{"box": [[4, 0], [10, 0], [10, 5], [0, 5]], "confidence": 0.9}]}
    assert differences(far, want) == [
        "box moved more than 3 px: [[4, 0], [10, 0], [10, 5], [0, 5]] vs [[0, 0], [10, 0], [10, 5], [0, 5]]",
        "confidence 0.9 vs 0.95",
    ]
    assert differences({**near, "text": "Total 5031.99."}, want) == [
        "text changed: 'Total 5031.99.' != 'Total 5031.99'"
    ]
    # a trailing space (int8 on another ISA) is not a change; a space inside a line is
    assert differences({**near, "text": "Total 5031.99 "}, want) == []
    assert (
        differences({**near, "text": "Total 5031.99 \nVAT 0"}, {**want, "text": "Total 5031.99\nVAT 0"}) == []
    )
    assert differences({**near, "text": "Total 5031 .99"}, want) == [
        "text changed: 'Total 5031 .99' != 'Total 5031.99'"
    ]
