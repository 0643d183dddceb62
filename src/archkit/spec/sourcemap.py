"""Where each key and value of a loaded document starts: field paths and their 1-based locations."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

# A field path in the document: keys and list indexes, e.g. ('dataflow', 'stages', 2).
FieldPath = tuple[Any, ...]


class Loc(NamedTuple):
    """A 1-based line and column (a tuple: the loader makes one per key and value)."""

    line: int
    col: int


@dataclass
class SourceMap:
    """Where each value (and each mapping key) of the document starts, by field path."""

    file: str
    values: dict[FieldPath, Loc] = field(default_factory=dict)
    keys: dict[FieldPath, Loc] = field(default_factory=dict)
    # line -> (codes, reason) of an `# archkit: ignore[CODE, ...] reason` comment on that line
    ignores: dict[int, tuple[frozenset[str], str]] = field(default_factory=dict)

    def read_ignores(self, text: str) -> None:
        """Record the suppression comments of the document's text (a reason is required)."""
        for number, line in enumerate(text.splitlines(), 1):
            if "archkit:" in line and (m := IGNORE_RE.search(line)):
                codes = frozenset(c.strip().upper() for c in m.group(1).split(",") if c.strip())
                self.ignores[number] = (codes, m.group(2).strip())

    def suppression(self, code: str, path: FieldPath, line: int) -> str | None:
        """The reason a finding of `code` at `line` (about `path`) is suppressed, or None.

        A comment counts on the finding's own line or on the line where an object enclosing it
        starts (a list item, a mapping), so one comment on `- id: x` covers that object.
        """
        if not self.ignores:
            return None
        lines = [line]
        for n in range(len(path), 0, -1):  # a list item where it starts, a mapping at its key
            prefix = path[:n]
            loc = self.values.get(prefix) if isinstance(prefix[-1], int) else self.keys.get(prefix)
            if loc is not None:
                lines.append(loc.line)
        for ln in dict.fromkeys(lines):
            entry = self.ignores.get(ln)
            if entry is not None and code in entry[0]:
                return entry[1]
        return None

    def at(self, path: FieldPath, key: bool = False) -> Loc:
        """The location of `path`, or of its nearest located ancestor."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if not key and p in self.keys:
                return self.keys[p]
            p = p[:-1]
        return self.values.get((), Loc(1, 1))


# `# archkit: ignore[AK312] why` or `# archkit: ignore[AK312, AK402] why`: a YAML comment (after
# a space or at the line's start) naming codes and a reason; without a reason it does not count.
IGNORE_RE = re.compile(r"(?:^|\s)#\s*archkit:\s*ignore\[([A-Za-z0-9_, ]+)\]\s*(\S.*)$")


def parse_path(text: str) -> FieldPath:
    """The inverse of `format_path` for keys without dots or brackets: 'a.b[2]' -> ('a', 'b', 2)."""
    out: list[Any] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", text):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def format_path(path: FieldPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
