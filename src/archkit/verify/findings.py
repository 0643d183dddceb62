"""Verify findings (pass, drift, unknown): the code a check reports, and where in the spec each finding is.

The registry (`archkit.verify.registry`) lists the sources and their codes; the report
(`archkit.verify.report`) writes findings as text, JSON, JUnit and SARIF. This module imports
neither, so that the checks, the registry and the report all build on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from archkit.diagnostics import Outcome
from archkit.spec import Spec, file_of, source_of
from archkit.spec.sourcemap import format_path


class Status(str, Enum):
    """The outcome of one verify check."""

    PASS = "pass"
    DRIFT = "drift"  # the system differs from the spec
    UNKNOWN = "unknown"  # could not be checked (forbidden, unreachable, not in this source)


@dataclass(frozen=True)
class Code:
    """One verify code: what it checks, why it matters, where the rule comes from."""

    id: str
    title: str
    rationale: str
    source: str = ""

    def explain(self, area: str) -> str:
        body = [f"{self.id} {self.title} (verify, {area})", "", self.rationale]
        if self.source:
            body += ["", f"Source: {self.source}"]
        return "\n".join(body) + "\n"


_OUTCOMES = {"pass": Outcome.PASS, "drift": Outcome.ERROR, "unknown": Outcome.UNKNOWN}


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

    title: str = ""  # the check's title (its `Code`'s); the code itself when not given

    def __post_init__(self) -> None:
        self.title = self.title or self.code

    # archkit.reporting.Located: what the one SARIF and JUnit writers read
    @property
    def outcome(self) -> Outcome:
        return _OUTCOMES[self.status.value]

    @property
    def hint(self) -> str:
        return ""

    @property
    def group(self) -> str:
        return self.area

    @property
    def name(self) -> str:
        return f"{self.code} {self.title}"

    @property
    def classname(self) -> str:
        return f"{self.area}.{self.object}"

    @property
    def properties(self) -> dict[str, str]:
        return {"object": self.object, "status": self.status.value, "where": self.where}

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
    """Collects findings for one area, locating each at the spec object (and field) it checks.

    Every finding names its check's `Code` (never a literal id), the object it is about (`obj`,
    e.g. "service/api"), the spec node the expectation comes from, and the message; `field`
    narrows the location to one field of that node, `where` names the cluster or server object.
    """

    def __init__(self, spec: Spec, area: str):
        self.spec, self.area = spec, area
        self.smap = source_of(spec)
        self.file = file_of(spec)
        self.findings: list[Finding] = []

    def add(
        self,
        status: Status,
        code: Code,
        obj: str,
        node: object,
        message: str,
        *,
        field: str | None = None,
        where: str = "",
    ) -> Finding:
        path = tuple(getattr(node, "spec_path", ()) or ())
        if field:
            path = path + tuple(field.split("."))
        loc = self.smap.at(path)
        f = Finding(
            self.area,
            obj,
            code.id,
            status,
            message,
            self.file,
            loc.line,
            loc.col,
            format_path(path),
            where,
            code.title,
        )
        self.findings.append(f)
        return f

    def ok(
        self, code: Code, obj: str, node: object, message: str, *, field: str | None = None, where: str = ""
    ) -> Finding:
        return self.add(Status.PASS, code, obj, node, message, field=field, where=where)

    def drift(
        self, code: Code, obj: str, node: object, message: str, *, field: str | None = None, where: str = ""
    ) -> Finding:
        return self.add(Status.DRIFT, code, obj, node, message, field=field, where=where)

    def unknown(
        self, code: Code, obj: str, node: object, message: str, *, field: str | None = None, where: str = ""
    ) -> Finding:
        return self.add(Status.UNKNOWN, code, obj, node, message, field=field, where=where)

    def expect(
        self,
        code: Code,
        obj: str,
        node: object,
        same: bool,
        *,
        ok: str,
        drift: str,
        field: str | None = None,
        where: str = "",
    ) -> Finding:
        """Pass with `ok` when the observed value is the declared one, else drift with `drift`."""
        status = Status.PASS if same else Status.DRIFT
        return self.add(status, code, obj, node, ok if same else drift, field=field, where=where)
