"""AK323: DNS lookups may hang: resolver options are missing or slow."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

MAX_TIMEOUT_S = 1  # seed 000 §5.7: options timeout:1 attempts:2 rotate
MAX_ATTEMPTS = 2


@register
class DnsResolverOptions(Rule):
    """Declared OS tuning has no resolver options, or a resolver timeout or attempt count above the seed's."""

    code = "AK323"
    name = "dns-resolver-options"
    severity = Severity.WARNING
    source = "seed 000 §5.7 (Kubernetes service records live 30 s; every AI service sets 'options timeout:1 attempts:2 rotate', lookups < 50 ms)"
    rationale = """
glibc's default resolver waits 5 s per attempt and tries twice per server, so a lost DNS
packet costs seconds on a path whose budget is milliseconds, and after a Service's address
changes a client can keep the old one for the record's 30 s TTL. Seed 000 §5.7 puts
`options timeout:1 attempts:2 rotate` in every AI service's resolv.conf and checks lookups
under 50 ms with `dig`. A spec that declares OS tuning states its resolver options.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        tun = ctx.spec.topology.os_tuning
        if tun is None:
            return
        if not tun.resolver_options:
            yield ctx.at(tun, None, "OS tuning sets no resolver_options (seed: timeout:1 attempts:2 rotate)")
            return
        for opt in tun.resolver_options:
            m = re.fullmatch(r"\s*(timeout|attempts):(\d+)\s*", opt)
            if m is None:
                continue
            limit = MAX_TIMEOUT_S if m.group(1) == "timeout" else MAX_ATTEMPTS
            if int(m.group(2)) > limit:
                yield ctx.at(
                    tun, "resolver_options", f"resolver option '{opt.strip()}' exceeds {m.group(1)}:{limit}"
                )
