"""Located diagnostics (code, severity, message, place) and their text and JSON forms.

SARIF and JUnit are written by archkit.reporting, for diagnostics and the other located results.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How bad a finding is; `error` fails `archkit check`."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]

    @property
    def outcome(self) -> Outcome:
        return _OUTCOME[self]


class Outcome(str, Enum):
    """What a located result means for a report (SARIF level and kind, JUnit element).

    Shared by check diagnostics, verify findings and load-test verdicts (archkit.reporting).
    """

    ERROR = "error"  # fails the run: a check error, drift, a missed budget
    WARNING = "warning"
    NOTE = "note"  # informational finding
    UNKNOWN = "unknown"  # could not be judged: SARIF review, JUnit skipped
    PASS = "pass"


_OUTCOME = {Severity.ERROR: Outcome.ERROR, Severity.WARNING: Outcome.WARNING, Severity.INFO: Outcome.NOTE}


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
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # why the finding is suppressed (an `# archkit: ignore[CODE] reason` comment), "" if it is not
    suppressed: str = field(default="", compare=False, hash=False)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.col, self.code, self.message)

    @property
    def outcome(self) -> Outcome:
        return _OUTCOME[self.severity]

    @property
    def group(self) -> str:
        """The rule family, e.g. `AK2xx` (latency and capacity)."""
        return f"{self.code[:3]}xx" if len(self.code) >= 4 else self.code

    def text(self) -> str:
        """`file:line:col: CODE severity message (field.path)` — the linter form."""
        where = f" ({self.path})" if self.path else ""
        hint = f" — {self.hint}" if self.hint else ""
        return f"{self.file}:{self.line}:{self.col}: {self.code} {self.severity.value} {self.message}{where}{hint}"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        if not d["extra"]:
            d.pop("extra")
        if not d["suppressed"]:
            d.pop("suppressed")
        return d


def sort_diagnostics(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Stable order: by file, line, column, code; duplicates removed."""
    seen: set[tuple[str, str, int, int, str, str]] = set()
    out = []
    for d in sorted(diags, key=Diagnostic.sort_key):
        key = (d.code, d.file, d.line, d.col, d.message, d.path)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


def summary_line(diags: list[Diagnostic], suppressed: int = 0) -> str:
    counts = {s: 0 for s in Severity}
    for d in diags:
        counts[d.severity] += 1
    return (
        f"{counts[Severity.ERROR]} error(s), {counts[Severity.WARNING]} warning(s), "
        f"{counts[Severity.INFO]} info" + (f", {suppressed} suppressed" if suppressed else "")
    )


def to_json(diags: list[Diagnostic], suppressed: Sequence[Diagnostic] = ()) -> str:
    """The findings and a summary; suppressed findings follow them, each with its reason."""
    return (
        json.dumps(
            {
                "diagnostics": [d.as_dict() for d in [*diags, *suppressed]],
                "summary": summary_line(diags, len(suppressed)),
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )
