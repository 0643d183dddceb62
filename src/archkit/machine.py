"""What a measurement ran on: recorded beside every calibration and load-test report.

`fingerprint()` is what a calibration records of its machine (CPU identity and kernel-selecting
ISA flags, cores, GPUs, the serving runtime and versions); `differences` and
`declared_differences` say where another machine, or an environment's declared hardware, differs.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from archkit.endpoints import is_loopback_url


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows, else '?'."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages, rounded; None where the platform has none."""
    with contextlib.suppress(OSError, AttributeError):
        return [round(x, 2) for x in os.getloadavg()]
    return None


# --------------------------------------------------------------------------- fingerprint
# What decides a calibration's numbers (issue 29): the same ONNX graph runs in bf16 on an
# AVX-512 BF16 CPU and in f32 on an AVX2-only one, 2-3x slower (reference_service/MEASUREMENTS.md:
# detector batch 1 46.9 ms vs 99.7 ms), so the CPU's name and the ISA features that select
# kernels (oneDNN/OpenVINO dispatch on them: avx2, avx512f, avx512_bf16, avx512_vnni, AMX) are
# recorded beside the cores, the GPU, and the runtime, backend, precision and package versions.
KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8")
FINGERPRINT_VERSION = 1


# The microarchitecture a family/model names, since the numbers alone do not say whether two
# machines run the same kernels (family 25 is Zen 3 or Zen 4 by model). AMD: the Zen generation by
# family and model range, as Linux assigns X86_FEATURE_ZEN1..ZEN6 (arch/x86/kernel/cpu/amd.c,
# bsp_init_amd); Intel family 6 server and client cores by model (arch/x86/include/asm/intel-family.h).
_UARCH: dict[tuple[str, int], tuple[tuple[int, int, str], ...]] = {
    ("AMD", 0x17): (
        (0x00, 0x2F, "Zen"),
        (0x50, 0x5F, "Zen"),
        (0x30, 0x4F, "Zen 2"),
        (0x60, 0x7F, "Zen 2"),
        (0x90, 0x91, "Zen 2"),
        (0xA0, 0xAF, "Zen 2"),
    ),
    ("AMD", 0x19): (
        (0x00, 0x0F, "Zen 3"),
        (0x20, 0x5F, "Zen 3"),
        (0x10, 0x1F, "Zen 4"),
        (0x60, 0xAF, "Zen 4"),
    ),
    ("AMD", 0x1A): (
        (0x00, 0x2F, "Zen 5"),
        (0x40, 0x4F, "Zen 5"),
        (0x60, 0x7F, "Zen 5"),
        (0x50, 0x5F, "Zen 6"),
        (0x80, 0xAF, "Zen 6"),
        (0xC0, 0xCF, "Zen 6"),
    ),
    ("Intel", 6): (
        (0x3F, 0x3F, "Haswell-X"),
        (0x4F, 0x4F, "Broadwell-X"),
        (0x55, 0x55, "Skylake-SP"),  # steppings 5-7 Cascade Lake, 10-11 Cooper Lake (below)
        (0x6A, 0x6A, "Ice Lake-SP"),
        (0x6C, 0x6C, "Ice Lake-D"),
        (0x8F, 0x8F, "Sapphire Rapids"),
        (0xCF, 0xCF, "Emerald Rapids"),
        (0xAD, 0xAE, "Granite Rapids"),
        (0xAF, 0xAF, "Sierra Forest"),
        (0x97, 0x9A, "Alder Lake"),
        (0xB7, 0xBA, "Raptor Lake"),
    ),
}
_INTEL_0x55 = ((5, 7, "Cascade Lake"), (10, 11, "Cooper Lake"))


def microarchitecture(cpu: dict[str, Any]) -> str | None:
    """The core generation a recorded CPU identity names ("Zen 5", "Sapphire Rapids"); None if unknown."""
    vendor = str(cpu.get("vendor") or cpu.get("model_name") or "")
    maker = "AMD" if "AMD" in vendor else "Intel" if ("Intel" in vendor or "GenuineIntel" in vendor) else None
    family, model = cpu.get("family"), cpu.get("model")
    if maker == "AMD" and family == 0x19 and not isinstance(model, int) and "flags" in cpu:
        # an older fingerprint without the model: of family 25 only Zen 4 has AVX-512
        return "Zen 4" if "avx512f" in cpu["flags"] else "Zen 3"
    if maker is None or not isinstance(family, int) or not isinstance(model, int):
        return None
    name = next((n for lo, hi, n in _UARCH.get((maker, family), ()) if lo <= model <= hi), None)
    stepping = cpu.get("stepping")
    if name == "Skylake-SP" and isinstance(stepping, int):
        name = next((n for lo, hi, n in _INTEL_0x55 if lo <= stepping <= hi), name)
    return name


def cpu_identity() -> dict[str, Any]:
    """Model name, vendor, family/model/stepping and the kernel-selecting ISA flags (Linux /proc/cpuinfo)."""
    out: dict[str, Any] = {"model_name": cpu_model()}
    fields = {"vendor_id": "vendor", "cpu family": "family", "model": "model", "stepping": "stepping"}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key in fields and fields[key] not in out:
                out[fields[key]] = int(value) if value.isdigit() else value
            elif key == "flags" and "flags" not in out:
                have = set(value.split())
                out["flags"] = [f for f in KERNEL_FLAGS if f in have]
            elif not line.strip() and "flags" in out:
                break  # the first processor is enough: all cores of one machine are alike
    return out


def gpus(timeout_s: float = 5.0) -> list[dict[str, Any]]:
    """Each NVIDIA GPU's name, memory, MIG mode, driver and CUDA version (nvidia-smi); [] without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    query = "name,memory.total,mig.mode.current,driver_version"
    try:
        listed = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=True,
        ).stdout
        banner = subprocess.run([exe], capture_output=True, text=True, timeout=timeout_s).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    cuda = re.search(r"CUDA Version:\s*([0-9.]+)", banner)
    out = []
    for row in listed.strip().splitlines():
        name, memory, mig, driver = ([*(c.strip() for c in row.split(",")), "", "", ""])[:4]
        out.append(
            {
                "name": name,
                "memory_mib": int(memory) if memory.isdigit() else memory,
                "mig": mig,
                "driver": driver,
                "cuda": cuda.group(1) if cuda else None,
            }
        )
    return out


def fingerprint(
    runtime: dict[str, Any] | None = None, serving: dict[str, str] | None = None
) -> dict[str, Any]:
    """This machine's fingerprint, with what serves the models when known.

    `runtime`: the serving runtime as the service reports it (e.g. the OCR reference service's
    `/v1/models` `runtime`: {"backend", "precision", "versions"}); `serving`: other serving
    software and its version (e.g. {"triton": "2.51.0"}). A calibration records it
    (`archkit calibrate`, an LLM engine's calibration alike) and `differences` compares two.
    """
    out: dict[str, Any] = {
        "version": FINGERPRINT_VERSION,
        "cpu": cpu_identity(),
        "cores": os.cpu_count(),
        "gpus": gpus(),
    }
    if runtime:
        out["runtime"] = dict(runtime)
    if serving:
        out["serving"] = dict(sorted(serving.items()))
    return out


def describe(fp: dict[str, Any] | None) -> str:
    """One line naming a machine: CPU (family/model; kernel flags), cores, GPUs, runtime."""
    if not fp:
        return "an unrecorded machine"
    cpu = fp.get("cpu") or {}
    uarch = microarchitecture(cpu)
    ident = ", ".join(
        x
        for x in (
            (f"{uarch}: " if uarch else "")
            + " ".join(f"{k} {cpu[k]}" for k in ("family", "model") if k in cpu),
            " ".join(cpu.get("flags") or []) or "no AVX2/AVX-512/AMX",
        )
        if x
    )
    parts = [f"{cpu.get('model_name', '?')} ({ident})", f"{fp.get('cores', '?')} cores"]
    for g in fp.get("gpus") or []:
        mig = f", MIG {g['mig']}" if g.get("mig") not in (None, "", "Disabled", "[N/A]") else ""
        parts.append(f"{g.get('name')} (driver {g.get('driver')}, CUDA {g.get('cuda')}{mig})")
    rt = fp.get("runtime") or {}
    if rt.get("backend"):
        parts.append(f"{rt['backend']} {rt.get('precision', '')}".strip())
    return ", ".join(parts)


def differences(recorded: dict[str, Any], here: dict[str, Any]) -> list[str]:
    """What differs between two fingerprints, one phrase each ("ISA flags: avx512_bf16 there, not here").

    Only what both sides know is compared: a runtime or package version missing on one side
    (the service did not say) is not a difference.
    """
    out: list[str] = []
    rc, hc = recorded.get("cpu") or {}, here.get("cpu") or {}
    if "model_name" in rc and "model_name" in hc and rc["model_name"] != hc["model_name"]:
        out.append(f"CPU {rc['model_name']} vs {hc['model_name']}")
    ru, hu = microarchitecture(rc), microarchitecture(hc)
    numbers = [k for k in ("family", "model") if k in rc and k in hc and rc[k] != hc[k]]
    if ru and hu and ru != hu:  # another core generation: other kernels, other service times
        was, tgt = (" ".join(f"{k} {c[k]}" for k in ("family", "model") if k in c) for c in (rc, hc))
        out.append(f"microarchitecture {ru} vs {hu} ({was} vs {tgt})")
    else:
        same = f" (both {ru})" if ru and ru == hu else ""
        out += [f"CPU {'family' if k == 'family' else 'model'} {rc[k]} vs {hc[k]}{same}" for k in numbers]
    if "flags" in rc and "flags" in hc:
        gone = [f for f in rc["flags"] if f not in hc["flags"]]
        new = [f for f in hc["flags"] if f not in rc["flags"]]
        if gone:
            out.append(f"ISA {' '.join(gone)} only on the calibrated machine")
        if new:
            out.append(f"ISA {' '.join(new)} only on the target")
    if recorded.get("cores") and here.get("cores") and recorded["cores"] != here["cores"]:
        out.append(f"{recorded['cores']} vs {here['cores']} cores")
    if "gpus" in recorded and "gpus" in here:
        rg = [(g.get("name"), g.get("mig"), g.get("driver"), g.get("cuda")) for g in recorded["gpus"]]
        hg = [(g.get("name"), g.get("mig"), g.get("driver"), g.get("cuda")) for g in here["gpus"]]
        if rg != hg:
            out.append(f"GPUs {_gpu_names(recorded)} vs {_gpu_names(here)}")
    rr, hr = recorded.get("runtime") or {}, here.get("runtime") or {}
    for key in ("backend", "precision"):
        if rr.get(key) and hr.get(key) and rr[key] != hr[key]:
            out.append(f"{key} {rr[key]} vs {hr[key]}")
    versions = {**(rr.get("versions") or {}), **(recorded.get("serving") or {})}
    now = {**(hr.get("versions") or {}), **(here.get("serving") or {})}
    for pkg in sorted(set(versions) & set(now)):
        if versions[pkg] != now[pkg]:
            out.append(f"{pkg} {versions[pkg]} vs {now[pkg]}")
    return out


def _gpu_names(fp: dict[str, Any]) -> str:
    names = [
        f"{g.get('name')} (MIG {g.get('mig')}, driver {g.get('driver')}, CUDA {g.get('cuda')})"
        for g in fp.get("gpus") or []
    ]
    return " + ".join(names) or "none"


# Tokens of an environment's free-text `hardware` that a fingerprint must show (or, after "no" or
# "without", must not): ISA features, as vendors and lscpu spell them, and GPU models.
_ISA_WORDS = (
    (re.compile(r"avx[-_ ]?512[-_ ]?bf16", re.I), "avx512_bf16"),
    (re.compile(r"avx[-_ ]?512[-_ ]?vnni|\bvnni\b", re.I), "avx512_vnni"),
    (re.compile(r"\bamx\b", re.I), "amx_tile"),
    (re.compile(r"avx[-_ ]?512(?![-_ ]?(bf16|vnni))", re.I), "avx512f"),
    (re.compile(r"\bavx2\b", re.I), "avx2"),
)
_UARCH_WORD = re.compile(
    r"\b(Zen ?[2-6]\b|Zen\b(?! ?[2-9])|Sapphire Rapids|Emerald Rapids|Granite Rapids|Ice Lake-SP|Cascade Lake|Skylake-SP)",
    re.I,
)
_GPU_WORD = re.compile(r"\b(H100|H200|H20|B200|GB200|A100|A10G?|A30|L40S?|L4|T4|V100|RTX ?\w+)\b", re.I)


def declared_differences(
    recorded: dict[str, Any], hardware: str | None, cores: float | None, device: str | None
) -> list[str]:
    """What a fingerprint contradicts in a declared environment (its `hardware` text, `cpu_cores`, `device`)."""
    out: list[str] = []
    if cores and recorded.get("cores") and float(recorded["cores"]) != float(cores):
        out.append(f"{recorded['cores']} cores measured, {cores:g} declared")
    has_gpu = bool(recorded.get("gpus"))
    if device == "gpu" and "gpus" in recorded and not has_gpu:
        out.append("measured without a GPU, the environment runs its models on one")
    text = hardware or ""
    flags = set((recorded.get("cpu") or {}).get("flags") or [])
    if "flags" in (recorded.get("cpu") or {}):
        for pattern, flag in _ISA_WORDS:
            for m in pattern.finditer(text):
                negated = re.search(r"\b(no|without|not)\s+(\w+\s+)?$", text[: m.start()], re.I)
                if negated and flag in flags:
                    out.append(f"{flag} measured, the environment declares none")
                elif not negated and flag not in flags:
                    out.append(f"no {flag} measured, the environment declares it")
    measured = microarchitecture(recorded.get("cpu") or {})
    for m in _UARCH_WORD.finditer(text):
        declared = re.sub(r"\s+", " ", m.group(1))
        if measured and declared.replace(" ", "").lower() != measured.replace(" ", "").lower():
            out.append(f"{measured} measured, the environment declares {declared}")
    names = " ".join(g.get("name") or "" for g in recorded.get("gpus") or [])
    for m in _GPU_WORD.finditer(text):
        if "gpus" in recorded and m.group(1).lower() not in names.lower():
            out.append(f"GPU {m.group(1)} declared, {names or 'none'} measured")
    return list(dict.fromkeys(out))


def is_loopback_host(url: str) -> bool:
    """Whether a URL (or host) names this machine: localhost, 127.0.0.0/8 or ::1, in any spelling.

    The one endpoint policy's parser (archkit.endpoints): `127.1` and `0x7f000001` are loopback,
    `127.0.0.1@10.0.0.1` and `[::ffff:10.0.0.1]` are not.
    """
    return is_loopback_url(url)
