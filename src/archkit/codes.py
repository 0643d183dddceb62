"""Every code archkit emits, in one catalogue: check rules (AK), verify checks (VK, VT, VP, ...) and
load-test verdicts (LT). `archkit explain CODE` reads it; each family keeps its codes next to the
code that emits them (the rule registry, the verify source registry, the load-test judge's codes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One code: its family, title and full explanation."""

    code: str
    family: str
    title: str
    text: str


def catalogue() -> dict[str, Entry]:
    """code -> Entry for every code archkit can emit."""
    from archkit.checks import all_rules
    from archkit.loadtest.codes import CODES as LT
    from archkit.verify.registry import all_codes

    out: dict[str, Entry] = {}
    for code, rule in all_rules().items():
        out[code] = Entry(code, "check", rule.summary(), rule.explain())
    for code, (vc, area) in all_codes().items():
        out[code] = Entry(code, f"verify ({area})", vc.title, vc.explain(area))
    for lt in LT:
        out[lt.id] = Entry(lt.id, "load test", lt.title, lt.explain())
    return out


def explain(code: str) -> str | None:
    """The explanation of a code (any family), or of a load-test verdict id such as end_to_end.p99_ms."""
    from archkit.loadtest.codes import code_of

    entries = catalogue()
    found = entries.get(code.strip().upper())
    if found is None:
        lt = code_of(code.strip())
        found = entries.get(lt) if lt else None
    return found.text if found else None
