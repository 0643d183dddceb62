"""AK322: the OS tuning box leaves out swappiness or the file-handle ceiling."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

MAX_SWAPPINESS = 1  # seed 000 §5.9: vm.swappiness=1 (swap effectively off)
MIN_FILE_MAX = 2_097_152  # seed 000 §5.9: fs.file-max=2097152


@register
class OsTuningIncomplete(Rule):
    """Declared OS tuning sets neither swappiness ≤ 1 nor fs.file-max ≥ 2,097,152."""

    code = "AK322"
    name = "os-tuning-incomplete"
    severity = Severity.WARNING
    source = "seed 000 §5.9 (somaxconn 65535, swappiness 1, file-max 2097152 in the diagram's 'OS tuning' box, applied by Ansible)"
    rationale = """
Seed 000 §5.9 keeps three kernel parameters in the diagram's OS-tuning box and applies them
with automation: `net.core.somaxconn=65535` (AK310), `vm.swappiness=1` (a swapped-out model
server turns milliseconds into seconds) and `fs.file-max=2097152` (the node-wide ceiling
above every container's `nofile`). A spec that declares OS tuning is held to all three.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        tun = ctx.spec.topology.os_tuning
        if tun is None:
            return
        swap = tun.swappiness if tun.swappiness is not None else tun.sysctls.get("vm.swappiness")
        if swap is None:
            yield ctx.at(tun, None, "OS tuning does not set vm.swappiness (seed: 1)")
        elif int(swap) > MAX_SWAPPINESS:
            where = "swappiness" if tun.swappiness is not None else "sysctls"
            yield ctx.at(
                tun, where, f"vm.swappiness is {swap} (> {MAX_SWAPPINESS}): a model server may be swapped out"
            )
        file_max = tun.sysctls.get("fs.file-max")
        if file_max is None:
            yield ctx.at(
                tun, "sysctls" if tun.sysctls else None, "OS tuning does not set fs.file-max (seed: 2097152)"
            )
        elif int(file_max) < MIN_FILE_MAX:
            yield ctx.at(tun, "sysctls", f"fs.file-max is {file_max} (< {MIN_FILE_MAX:,})")
