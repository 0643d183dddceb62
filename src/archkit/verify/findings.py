"""Verify findings (pass, drift, unknown) with their spec location, and their text, JSON and JUnit forms."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from archkit.spec import Spec, file_of, source_of
from archkit.spec.loader import format_path


class Status(str, Enum):
    """The outcome of one verify check."""

    PASS = "pass"
    DRIFT = "drift"  # the system differs from the spec
    UNKNOWN = "unknown"  # could not be checked (forbidden, unreachable, not in this source)


class _Codes(Mapping[str, tuple[str, str]]):
    """code -> (title, rationale) of every registered verify check (read from the source registry)."""

    def _all(self) -> dict[str, tuple[str, str]]:
        from archkit.verify.registry import all_codes

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
    from archkit.verify.registry import sources

    names = [s.name for s in sources()]
    return tuple(names + sorted({f.area for f in findings} - set(names)))


@dataclass
class Finding:
    """The outcome of one check on one object, and where in the spec the expectation comes from."""

    area: str
    object: str
    code: str
    status: Status
    message: str
    file: str = "<spec>"
    line: int = 1
    col: int = 1
    path: str = ""
    where: str = ""  # the cluster or server object it was checked against

    @property
    def title(self) -> str:
        from archkit.verify.registry import code

        found = code(self.code)
        return found.title if found else self.code

    def as_dict(self) -> dict:
        return {
            "area": self.area,
            "object": self.object,
            "code": self.code,
            "check": self.title,
            "status": self.status.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.path,
            "where": self.where,
        }


class Recorder:
    """Collects findings for one area, locating each at the spec object (and field) it checks."""

    def __init__(self, spec: Spec, area: str):
        self.spec, self.area = spec, area
        self.smap = source_of(spec)
        self.file = file_of(spec)
        self.findings: list[Finding] = []

    def add(
        self,
        status: Status,
        code: str,
        obj_label: str,
        node: Any,
        fld: str | None,
        message: str,
        where: str = "",
    ) -> Finding:
        path = tuple(getattr(node, "spec_path", ()) or ())
        if fld:
            path = path + tuple(fld.split("."))
        loc = self.smap.at(path)
        f = Finding(
            self.area,
            obj_label,
            code,
            status,
            message,
            self.file,
            loc.line,
            loc.col,
            format_path(path),
            where,
        )
        self.findings.append(f)
        return f

    def ok(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.PASS, code, obj_label, node, fld, message, where)

    def drift(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.DRIFT, code, obj_label, node, fld, message, where)

    def unknown(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.UNKNOWN, code, obj_label, node, fld, message, where)


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
    counts = report.counts()
    root = ET.Element(
        "testsuites",
        {
            "name": f"archkit verify {report.spec_file}",
            "tests": str(len(report.findings)),
            "failures": str(report.total(Status.DRIFT)),
            "skipped": str(report.total(Status.UNKNOWN)),
            "errors": "0",
        },
    )
    for area in areas(report.findings):
        items = [f for f in report.findings if f.area == area]
        if not items:
            continue
        c = counts[area]
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": area,
                "tests": str(len(items)),
                "failures": str(c["drift"]),
                "skipped": str(c["unknown"]),
                "errors": "0",
            },
        )
        for f in items:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": f"{area}.{f.object}",
                    "name": f"{f.code} {f.title}",
                    "file": f.file,
                    "line": str(f.line),
                },
            )
            detail = f"{f.file}:{f.line}:{f.col}: {f.code} {f.message}" + (f" [{f.where}]" if f.where else "")
            if f.status is Status.DRIFT:
                el = ET.SubElement(case, "failure", {"type": "drift", "message": f.message})
                el.text = detail
            elif f.status is Status.UNKNOWN:
                ET.SubElement(case, "skipped", {"message": f.message})
            else:
                out = ET.SubElement(case, "system-out")
                out.text = f.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_SARIF_LEVEL = {Status.DRIFT: "error", Status.UNKNOWN: "note"}


def to_sarif(report: VerifyReport, version: str = "") -> str:
    """SARIF 2.1.0, one run: a result per drift (error) and per unknown (note, kind review).

    Passing checks are left out: code-scanning tools list results, and a pass is not one. Each
    rule is a registered verify code with its title, rationale and source.
    """
    from archkit.verify.registry import all_codes

    codes = all_codes()
    used = sorted(set(codes) | {f.code for f in report.findings})
    index = {c: i for i, c in enumerate(used)}
    rules = []
    for cid in used:
        entry = codes.get(cid)
        rule: dict[str, Any] = {"id": cid, "name": entry[0].title if entry else cid}
        if entry:
            c, area = entry
            rule["shortDescription"] = {"text": c.title}
            rule["fullDescription"] = {"text": c.rationale}
            rule["help"] = {"text": c.explain(area)}
            rule["properties"] = {"area": area, "source": c.source}
        rules.append(rule)
    results = []
    for f in report.findings:
        if f.status not in _SARIF_LEVEL:
            continue
        region = {"startLine": max(1, f.line), "startColumn": max(1, f.col)}
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "kind": "fail" if f.status is Status.DRIFT else "review",
            "level": _SARIF_LEVEL[f.status],
            "message": {"text": f.message + (f" [{f.where}]" if f.where else "")},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.file}, "region": region}}],
            "properties": {"area": f.area, "object": f.object, "status": f.status.value, "path": f.path},
        }
        if f.where:
            result["properties"]["where"] = f.where
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "archkit verify", "version": version, "rules": rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
