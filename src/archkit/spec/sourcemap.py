"""Where each key and value of a loaded document starts: field paths and their 1-based locations."""

from __future__ import annotations

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


def format_path(path: FieldPath) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
