"""The "used by" column of docs/sources.md, generated from the citations the code carries.

Every rule, verify code, load-test verdict and generator declares its `source` ("seed 000 §2.1
(...); seed 004 §3.1"). This module reads those citations, groups them by seed section and
rewrites only the last cell of each row of the two seed tables; the prose of what a section
establishes stays hand-written. What cites a section without being a code (an example spec, a
module of the performance model, the reference service) is declared once in `ALSO`.

Regenerate with: .venv/bin/python -m archkit.docs.sources docs/sources.md
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from archkit.atomic import write_atomic
from archkit.errors import ArchkitError

REGENERATE = ".venv/bin/python -m archkit.docs.sources docs/sources.md"

# One citation token: "seed 000", or a section "§2.1" / a range "§2.1–2.3" of the last seed named.
_TOKEN = re.compile(r"seed (?P<seed>\d{3})|§(?P<sec>\d+(?:\.\d+)?)(?:\s*[–-]\s*(?P<end>\d+(?:\.\d+)?))?")
_PARENS = re.compile(r"\([^()]*\)")
_JOIN = re.compile(r"[\s,]*(?:and\s*)?")
_TABLE_HEADING = re.compile(r"^## seed (\d{3})\s*$")
_ROW = re.compile(r"^\| (?P<sec>§[\d.]+) \| (?P<what>.*) \|(?P<used>(?:[^|\\]|\\.)*)\|$")

# Citations that are not a code: what else acts on (or reproduces) a seed section. A backticked
# path is a file of this repository and a backticked `archkit.x` a module; a test checks both exist.
ALSO: Mapping[str, tuple[str, ...]] = {
    "000 §1": ("the product as a whole: `archkit calibrate`, `archkit capacity`, `archkit explain`",),
    "000 §2.1": (
        "batching and queueing math (`archkit.perf.batching`, `archkit.perf.queueing`)",
        "the admission and rate-limit model (`archkit.perf.limits`, `traffic.rate_limits`)",
        "`examples/industrial-inspection.yaml`",
    ),
    "000 §2.3": ("the topology diagram's GPU isolation labels", "`examples/industrial-inspection.yaml`"),
    "000 §2.4": ("`examples/loan-preapproval.yaml`",),
    "000 §3.1": ("`examples/voice-customer-service.yaml`",),
    "000 §3.2": ("`examples/recommendation.yaml`",),
    "000 §3.3": ("`examples/recommendation.yaml`",),
    "000 §3.4": ("the fault-tree engine (`archkit.faulttree`)", "`archkit runbook`"),
    "000 §4.1": ("`reference_service/Dockerfile`",),
    "000 §4.4": ("`archkit loadtest` levels (`archkit.plans.loadtest`)",),
    "000 §5": ("the rule catalogue ([checks.md](checks.md))",),
    "000 §5.2": ("the onboarding page's logging section (`observability.logging`)",),
    "000 §5.10": ("the reference service's quantisation ablation (`reference_service/MEASUREMENTS.md`)",),
    "000 §5.12": ("`reference_service/verify_rollback.py`",),
    "000 §6": ("the review page",),
    "004 §1": ("the connection-pool model (`archkit.perf.pools`), printed by `archkit capacity`",),
    "004 §2.1": ("`examples/loan-preapproval.yaml`",),
    "004 §2.2": ("`examples/loan-preapproval.yaml` (planes)",),
    "004 §2.3": ("the shared-resource capacity model (`archkit.perf.resources`)",),
    "004 §3.1": ("the reference service's models (`reference_service/models.py`)",),
    "004 §3.2": ("`archkit capacity --rate`", "`archkit.perf.limits`"),
    "004 §3.3": (
        "the reference service's cache (`reference_service/cache.py`)",
        "the hit/miss mix of `archkit capacity` (`archkit.perf.cache`)",
    ),
    "004 §4": ("the rule catalogue ([checks.md](checks.md))",),
    "004 §4.5": ("the reference service's scope (`reference_service/README.md`)",),
}


@dataclass(frozen=True)
class Citer:
    """One thing in the code that cites seed sections: a rule, verify code, verdict or generator."""

    kind: str  # "rules", "verify", "load test", "generators"
    name: str
    source: str


def sections(source: str) -> list[str]:
    """The seed sections a citation names, as "000 §2.1".

    A "§" binds to the seed named just before it when only commas, "and" or a parenthesis lie
    between them, so "RFC 9110 §10.2.3" after a seed citation is not taken for a seed section.

    >>> sections("seed 004 §1 (OOM); seed 000 §5.1, §2.2–2.3 and §6; RFC 9110 §10.2")
    ['004 §1', '000 §5.1', '000 §2.2', '000 §2.3', '000 §6']
    """
    out: list[str] = []
    seed: str | None = None
    last = 0
    for m in _TOKEN.finditer(source):
        gap = _PARENS.sub("", source[last : m.start()])
        last = m.end()
        if m["seed"]:
            seed = m["seed"]
            continue
        if seed is None or not _JOIN.fullmatch(gap):
            seed = None
            continue
        for sec in _expand(m["sec"], m["end"]):
            ref = f"{seed} §{sec}"
            if ref not in out:
                out.append(ref)
    return out


def _expand(start: str, end: str | None) -> list[str]:
    """§2.1–2.3 -> 2.1, 2.2, 2.3 (a range within one section); §2.1–3 or a bare one -> itself/ends."""
    if not end:
        return [start]
    a, b = start.split("."), end.split(".")
    if len(a) == 2 and len(b) == 2 and a[0] == b[0] and int(a[1]) <= int(b[1]):
        return [f"{a[0]}.{n}" for n in range(int(a[1]), int(b[1]) + 1)]
    if len(a) == 2 and len(b) == 1 and int(a[1]) <= int(b[0]):  # "§2.1–3" as written in comments
        return [f"{a[0]}.{n}" for n in range(int(a[1]), int(b[0]) + 1)]
    return [start, end]


def citers() -> list[Citer]:
    """Everything registered that carries a `source`: rules, verify codes, load-test verdicts, generators."""
    from archkit.checks import all_rules
    from archkit.generators.registry import all_generators
    from archkit.loadtest.codes import CODES
    from archkit.verify.registry import all_codes

    out = [Citer("rules", code, rule.source) for code, rule in all_rules().items()]
    out += [Citer("verify", code, vc.source) for code, (vc, _area) in all_codes().items()]
    out += [Citer("load test", lt.id, lt.source) for lt in CODES]
    out += [Citer("generators", f"`{g.name}`", g.source) for g in all_generators().values()]
    return out


def used_by(items: Iterable[Citer] | None = None) -> dict[str, str]:
    """Section ("000 §2.1") -> the text of its "used by" cell."""
    cited: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for c in citers() if items is None else items:
        for ref in sections(c.source):
            if c.name not in cited[ref][c.kind]:
                cited[ref][c.kind].append(c.name)
    out: dict[str, str] = {}
    for ref in sorted(set(cited) | set(ALSO), key=_order):
        parts = [
            f"{kind} {_runs(sorted(cited[ref][kind]))}"
            for kind in ("rules", "verify", "load test", "generators")
            if cited[ref].get(kind)
        ]
        parts += list(ALSO.get(ref, ()))
        out[ref] = "; ".join(parts).replace("|", "\\|")
    return out


def _order(ref: str) -> tuple[str, tuple[int, ...]]:
    seed, sec = ref.split(" §")
    return seed, tuple(int(p) for p in sec.split("."))


def _runs(names: list[str]) -> str:
    """AK501, AK502, AK503, AK507 -> AK501–AK503, AK507 (three or more consecutive codes)."""
    out: list[str] = []
    i = 0
    while i < len(names):
        j = i
        while j + 1 < len(names) and _next(names[j], names[j + 1]):
            j += 1
        out.append(f"{names[i]}–{names[j]}" if j - i >= 2 else ", ".join(names[i : j + 1]))
        i = j + 1
    return ", ".join(out)


def _next(a: str, b: str) -> bool:
    ma, mb = re.fullmatch(r"([A-Z]+)(\d+)", a), re.fullmatch(r"([A-Z]+)(\d+)", b)
    return bool(ma and mb and ma[1] == mb[1] and int(mb[2]) == int(ma[2]) + 1)


class SourcesError(ArchkitError, ValueError):
    """docs/sources.md cannot take the generated column (a cited section has no row)."""


def rewrite(text: str, cells: Mapping[str, str] | None = None) -> str:
    """docs/sources.md with every seed-table row's "used by" cell replaced by the generated one.

    Raises SourcesError naming the sections the code cites that the tables lack.
    """
    cells = used_by() if cells is None else cells
    seed: str | None = None
    seen: set[str] = set()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        heading = _TABLE_HEADING.match(line)
        if heading:
            seed = heading[1]
            continue
        if line.startswith("## "):
            seed = None
            continue
        row = _ROW.match(line) if seed else None
        if row is None:
            continue
        ref = f"{seed} {row['sec']}"
        seen.add(ref)
        lines[i] = f"| {row['sec']} | {row['what']} | {cells.get(ref, '—')} |"
    missing = sorted(set(cells) - seen, key=_order)
    if missing:
        raise SourcesError(
            "docs/sources.md has no row for the cited section(s) "
            + ", ".join(missing)
            + ": add one per section"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(f"usage: {REGENERATE}\n")
        return 2
    path = Path(argv[1])
    try:
        new = rewrite(path.read_text(encoding="utf-8"))
    except (OSError, SourcesError) as exc:
        sys.stderr.write(f"{path}: {exc}\n")
        return 1
    write_atomic(path, new)
    return 0


if __name__ == "__main__":  # pragma: no cover - a maintenance entry point
    raise SystemExit(main(sys.argv))
