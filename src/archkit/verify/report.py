"""One `archkit verify` run's findings and what was read, as text, JSON, JUnit and SARIF."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from archkit.reporting import RuleInfo, junit, sarif
from archkit.verify.findings import Finding, Status
from archkit.verify.registry import all_codes, sources


class _Codes(Mapping[str, tuple[str, str]]):
    """code -> (title, rationale) of every registered verify check (read from the source registry)."""

    def _all(self) -> dict[str, tuple[str, str]]:
        return {cid: (c.title, c.rationale) for cid, (c, _) in all_codes().items()}

    def __getitem__(self, key: str) -> tuple[str, str]:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


# Drift codes have their own prefixes, one per source: VK1xx Kubernetes, VT2xx Triton, VP3xx
# Prometheus. Each check declares its code next to its logic (archkit.verify.registry).
CODES: Mapping[str, tuple[str, str]] = _Codes()


def areas(findings: Iterable[Finding] = ()) -> tuple[str, ...]:
    """The report order of areas: registered sources first, then any other area seen."""
    names = [s.name for s in sources()]
    return tuple(names + sorted({f.area for f in findings} - set(names)))


@dataclass
class VerifyReport:
    """All findings of one `archkit verify` run, and what was read to reach them."""

    spec_file: str
    findings: list[Finding] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    api_calls: int = 0

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for f in self.findings:
            row = out.setdefault(f.area, {s.value: 0 for s in Status})
            row[f.status.value] += 1
        return out

    def total(self, status: Status) -> int:
        return sum(1 for f in self.findings if f.status is status)

    def failed(self, fail_on: str = "drift") -> bool:
        """Whether the run fails: on drift, on drift or unknown, or never."""
        if fail_on == "never":
            return False
        if fail_on == "unknown":
            return self.total(Status.DRIFT) + self.total(Status.UNKNOWN) > 0
        return self.total(Status.DRIFT) > 0

    def summary(self) -> str:
        parts = []
        counts = self.counts()
        for area in areas(self.findings):
            if area in counts:
                c = counts[area]
                parts.append(f"{area}: {c['pass']} pass, {c['drift']} drift, {c['unknown']} unknown")
        total = (
            f"{self.total(Status.PASS)} pass, {self.total(Status.DRIFT)} drift, "
            f"{self.total(Status.UNKNOWN)} unknown"
        )
        return "; ".join(parts + [f"total: {total}"]) if parts else "nothing was checked"


def _grouped(findings: Iterable[Finding]) -> list[tuple[tuple[str, str], list[Finding]]]:
    findings = list(findings)
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.area, f.object), []).append(f)
    order = {a: i for i, a in enumerate(areas(findings))}
    return sorted(groups.items(), key=lambda kv: order.get(kv[0][0], 99))  # stable within an area


def to_text(report: VerifyReport, colour: bool = False, show_pass: bool = True) -> str:
    """A table grouped by area and object: status, code, check, spec line, message."""
    paint = {Status.PASS: "\033[32m", Status.DRIFT: "\033[31m", Status.UNKNOWN: "\033[33m"}
    lines = [f"archkit verify {report.spec_file}"]
    for src in report.sources:
        lines.append(f"  {src['area']}: {src['source']}")
        for kind, r in (src.get("kinds") or {}).items():
            if r["status"] != "complete" or r.get("message"):
                lines.append(f"    {kind}: {r['status']}{' — ' + r['message'] if r.get('message') else ''}")
    for (area, obj), items in _grouped(report.findings):
        shown = [f for f in items if show_pass or f.status is not Status.PASS]
        if not shown:
            continue
        where = next((f.where for f in items if f.where), "")
        lines.append("")
        lines.append(f"{area} · {obj}" + (f"  ({where})" if where else ""))
        for f in shown:
            status = f.status.value
            pad = " " * (7 - len(status))
            if colour:
                status = f"{paint[f.status]}{status}\033[0m"
            lines.append(f"  {status}{pad}  {f.code}  {f.title:<26} {f.file}:{f.line}  {f.message}")
    lines.append("")
    lines.append(report.summary())
    return "\n".join(lines) + "\n"


def to_json(report: VerifyReport) -> str:
    data = {
        "spec": report.spec_file,
        "summary": report.counts(),
        "totals": {s.value: report.total(s) for s in Status},
        "sources": report.sources,
        "api_calls": report.api_calls,
        "findings": [f.as_dict() for f in report.findings],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_junit(report: VerifyReport) -> str:
    """JUnit XML: a testsuite per area, a testcase per finding; drift = failure, unknown = skipped."""
    order = {a: i for i, a in enumerate(areas(report.findings))}
    findings = sorted(report.findings, key=lambda f: order[f.area])  # stable: areas in report order
    return junit(findings, f"archkit verify {report.spec_file}", failure_type="drift")


def to_sarif(report: VerifyReport, version: str = "") -> str:
    """SARIF 2.1.0, one run: a result per drift (error) and per unknown (note, kind review).

    Passing checks are left out: code-scanning tools list results, and a pass is not one. Each
    rule is a registered verify code with its title, rationale and source.
    """
    rules = {
        cid: RuleInfo(
            c.title, c.title, c.rationale, c.source, properties={"area": area}, explain=c.explain(area)
        )
        for cid, (c, area) in all_codes().items()
    }
    return sarif(report.findings, "archkit verify", version, rules)
