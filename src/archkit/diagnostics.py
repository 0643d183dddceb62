"""Located diagnostics (code, severity, message, place) and their text, JSON and SARIF forms."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import Enum


class Severity(str, Enum):
    """How bad a finding is; `error` fails `archkit check`."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True, order=False)
class Diagnostic:
    """One finding, pointing at a file, line, column and field path."""

    code: str
    severity: Severity
    message: str
    file: str = "<spec>"
    line: int = 1
    col: int = 1
    path: str = ""
    hint: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def sort_key(self) -> tuple:
        return (self.file, self.line, self.col, self.code, self.message)

    def text(self) -> str:
        """`file:line:col: CODE severity message (field.path)` — the linter form."""
        where = f" ({self.path})" if self.path else ""
        hint = f" — {self.hint}" if self.hint else ""
        return f"{self.file}:{self.line}:{self.col}: {self.code} {self.severity.value} {self.message}{where}{hint}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = self.severity.value
        if not d["extra"]:
            d.pop("extra")
        return d


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Stable order: by file, line, column, code; duplicates removed."""
    seen: set = set()
    out = []
    for d in sorted(diags, key=Diagnostic.sort_key):
        key = (d.code, d.file, d.line, d.col, d.message, d.path)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


def summary_line(diags: list[Diagnostic]) -> str:
    counts = {s: 0 for s in Severity}
    for d in diags:
        counts[d.severity] += 1
    return (
        f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), "
        f"{counts[Severity.INFO]} info"
    )


def to_json(diags: list[Diagnostic]) -> str:
    return (
        json.dumps(
            {"diagnostics": [d.as_dict() for d in diags], "summary": summary_line(diags)},
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def to_sarif(diags: list[Diagnostic], rules: dict[str, dict], version: str) -> str:
    """SARIF 2.1.0 log with one run; `rules` maps code -> {name, summary, help}."""
    used = sorted({d.code for d in diags} | set(rules))
    index = {code: i for i, code in enumerate(used)}
    driver_rules = []
    for code in used:
        meta = rules.get(code, {})
        rule = {
            "id": code,
            "name": meta.get("name", code),
            "shortDescription": {"text": meta.get("summary", code)},
        }
        if meta.get("help"):
            rule["fullDescription"] = {"text": meta["help"]}
        if meta.get("severity"):
            rule["defaultConfiguration"] = {"level": _SARIF_LEVEL[Severity(meta["severity"])]}
        driver_rules.append(rule)
    results = []
    for d in diags:
        region = {"startLine": max(1, d.line), "startColumn": max(1, d.col)}
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVEL[d.severity],
            "message": {"text": d.message + (f" ({d.path})" if d.path else "")},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": d.file}, "region": region}}],
        }
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "archkit", "version": version, "rules": driver_rules}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
