"""docs/verify.md's sources and codes tables, generated from the verify source registry.

Regenerate with: .venv/bin/python -m archkit.verify.catalogue docs/verify.md
(the text between the `<!-- generated: NAME -->` and `<!-- end: NAME -->` markers is replaced).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from archkit.verify.registry import all_codes, sources


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def sources_table() -> str:
    rows = ["| option | reads | notes |", "|---|---|---|"]
    for src in sources():
        for row in src.docs:
            rows.append(f"| {row.option} | {_cell(row.reads)} | {_cell(row.notes)} |")
    return "\n".join(rows) + "\n"


def codes_table() -> str:
    families = ", ".join(f"{s.prefix}{s.codes()[0].id[2]}xx {s.title}" for s in sources() if s.codes())
    rows = [f"{families}.", "", "| code | check | why | source |", "|---|---|---|---|"]
    for cid, (code, _) in all_codes().items():
        rows.append(f"| {cid} | {_cell(code.title)} | {_cell(code.rationale)} | {_cell(code.source)} |")
    return "\n".join(rows) + "\n"


TABLES = {"sources": sources_table, "codes": codes_table}


def _filler(table: str) -> Callable[[re.Match[str]], str]:
    """A replacement for `re.sub` that keeps the markers and puts `table` between them."""
    return lambda m: m.group(1) + table + m.group(2)


def update(text: str) -> str:
    """`text` with every generated region replaced by the registry's current table."""
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- end: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no '<!-- generated: {name} -->' ... '<!-- end: {name} -->' region")
        text = pattern.sub(_filler(make()), text)
    return text


def main(argv: list[str]) -> int:
    from archkit.atomic import write_atomic

    path = Path(argv[0] if argv else "docs/verify.md")
    text = path.read_text(encoding="utf-8")
    new = update(text)
    if new != text:
        write_atomic(path, new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
