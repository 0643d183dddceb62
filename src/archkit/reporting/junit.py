"""The one JUnit XML writer, for check diagnostics, verify findings and load-test verdicts.

A testsuite per group (rule family, verify source, load level), a testcase per result:
errors are failures, unknowns are skipped, passes and lesser findings print to system-out.
Written with ElementTree, so every attribute and text is escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable

from archkit.diagnostics import Outcome
from archkit.reporting.located import Located


def junit(
    results: Iterable[Located],
    name: str,
    *,
    failure_type: str = "failure",
    empty: str = "nothing to report",
    time_s: float | None = None,
) -> str:
    """JUnit XML for `results` under a `<testsuites name=...>`; `empty` names the case when there are none."""
    items = list(results)
    groups: dict[str, list[Located]] = {}
    for r in items:
        groups.setdefault(r.group or name, []).append(r)
    root = ET.Element("testsuites", _counts(name, items))
    if time_s is not None:
        root.set("time", f"{time_s:.3f}")
    for group, members in groups.items():
        suite = ET.SubElement(root, "testsuite", _counts(group, members))
        for r in members:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": getattr(r, "classname", "") or group,
                    "name": getattr(r, "name", "") or r.code,
                    "file": r.file,
                    "line": str(r.line),
                },
            )
            detail = f"{r.file}:{r.line}:{r.col}: {r.code} {r.message}" + (f" — {r.hint}" if r.hint else "")
            if r.outcome is Outcome.ERROR:
                ET.SubElement(case, "failure", {"type": failure_type, "message": r.message}).text = detail
            elif r.outcome is Outcome.UNKNOWN:
                ET.SubElement(case, "skipped", {"message": r.message})
            else:
                ET.SubElement(case, "system-out").text = detail
    if not items:
        suite = ET.SubElement(root, "testsuite", _counts(name, []))
        case = ET.SubElement(suite, "testcase", {"classname": name, "name": "none"})
        ET.SubElement(case, "skipped", {"message": empty})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _counts(name: str, items: list[Located]) -> dict[str, str]:
    return {
        "name": name,
        "tests": str(len(items)),
        "failures": str(sum(r.outcome is Outcome.ERROR for r in items)),
        "skipped": str(sum(r.outcome is Outcome.UNKNOWN for r in items)),
        "errors": "0",
    }
