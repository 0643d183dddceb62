"""The one shape of a result located in the spec, and the one helper that locates a spec path.

A check diagnostic (`archkit.diagnostics.Diagnostic`), a verify finding
(`archkit.verify.findings.Finding`) and a load-test verdict (`archkit.loadtest.judge.Verdict`,
through `Result`) all satisfy `Located`: a code, a message, where in the spec file it points
(file, line, column, field path), an outcome, an optional fix hint and a group (the rule
family, the verify source, the load level). The SARIF and JUnit writers take any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from archkit.diagnostics import Outcome
from archkit.spec import Spec, file_of, source_of
from archkit.spec.sourcemap import format_path


class Located(Protocol):
    """Anything the SARIF and JUnit writers can report."""

    @property
    def code(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def outcome(self) -> Outcome: ...
    @property
    def hint(self) -> str: ...
    @property
    def group(self) -> str: ...


class Location(NamedTuple):
    """Where a spec path is in its file: 1-based line and column, and the path as text."""

    file: str
    line: int
    col: int
    path: str


def locate(spec: Spec, path: Sequence[str | int], key: bool = False) -> Location:
    """The location of `path` in the spec's file (its nearest located ancestor if it has none).

    `key=True` points at the key rather than its value (for "unknown key" style findings).
    """
    p = tuple(path)
    loc = source_of(spec).at(p, key=key)
    return Location(file_of(spec), loc.line, loc.col, format_path(p))


@dataclass(frozen=True)
class Result:
    """A concrete `Located`, for results that do not carry their location themselves."""

    code: str
    message: str
    outcome: Outcome
    file: str = "<spec>"
    line: int = 1
    col: int = 1
    path: str = ""
    hint: str = ""
    group: str = ""
    name: str = ""  # a longer title for JUnit's testcase name (default: the code)
    properties: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def at(
        cls,
        where: Location,
        code: str,
        message: str,
        outcome: Outcome,
        *,
        hint: str = "",
        group: str = "",
        name: str = "",
    ) -> Result:
        """A result at `where` (from `locate`)."""
        return cls(code, message, outcome, where.file, where.line, where.col, where.path, hint, group, name)
