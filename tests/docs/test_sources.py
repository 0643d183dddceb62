"""docs/sources.md's "used by" column is generated from the citations in the code and must not go stale."""

from __future__ import annotations

import importlib.util
import re

import pytest

from archkit.docs.sources import ALSO, REGENERATE, Citer, SourcesError, citers, rewrite, sections, used_by
from tests.conftest import ROOT

SOURCES_MD = ROOT / "docs" / "sources.md"


def test_docs_sources_md_is_current():
    committed = SOURCES_MD.read_text(encoding="utf-8")
    assert rewrite(committed) == committed, f"docs/sources.md is stale; regenerate it with: {REGENERATE}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("seed 000 §2.1 (Little's law)", ["000 §2.1"]),
        ("seed 004 §1 (OOM); seed 000 §5.1, §2.2, §2.3", ["004 §1", "000 §5.1", "000 §2.2", "000 §2.3"]),
        ("seed 000 §3.4 and §6 (the on-call engineer)", ["000 §3.4", "000 §6"]),
        ("seed 000 §2.1–2.2", ["000 §2.1", "000 §2.2"]),
        ("seed 000 §2.1-3", ["000 §2.1", "000 §2.2", "000 §2.3"]),
        # a section of another document after a seed citation is not the seed's
        ("seed 004 §3.2 (limits); RFC 6585 §4 and RFC 9110 §10.2.3", ["004 §3.2"]),
        ("Kubernetes securityContext", []),
        ("§2.1 with no seed named", []),
    ],
)
def test_sections_read_by_hand(source, expected):
    assert sections(source) == expected


def test_a_rule_added_later_lands_in_its_sections_row():
    """Robust to rules that land after this page: a new citer appears in the rows it cites."""
    extra = Citer("rules", "AK999", "seed 004 §4.4 (a semaphore of three); seed 000 §5.4")
    cells = used_by([*citers(), extra])
    assert "AK999" in cells["004 §4.4"]
    assert "AK999" in cells["000 §5.4"]
    new = rewrite(SOURCES_MD.read_text(encoding="utf-8"), cells)
    seed_004 = new[new.index("## seed 004") :]
    row = next(line for line in seed_004.splitlines() if line.startswith("| §4.4 |"))
    assert row.endswith("AK999 |") and "rules " in row  # after any rules that cite §4.4 already


def test_a_citation_of_a_section_without_a_row_is_refused():
    cells = used_by([Citer("rules", "AK999", "seed 004 §9.9 (nowhere)")])
    with pytest.raises(SourcesError, match="004 §9.9"):
        rewrite(SOURCES_MD.read_text(encoding="utf-8"), cells)


def test_consecutive_codes_are_written_as_a_range():
    cells = used_by([Citer("rules", f"AK{n}", "seed 000 §5.5") for n in (501, 502, 503, 507)])
    assert cells["000 §5.5"] == "rules AK501–AK503, AK507"


def test_every_file_and_module_named_in_also_exists():
    for ref, items in ALSO.items():
        assert re.fullmatch(r"00[04] §\d+(\.\d+)?", ref), ref
        for item in items:
            for name in re.findall(r"`([^`]+)`", item):
                if name.startswith("archkit."):
                    assert importlib.util.find_spec(name) is not None, f"{ref}: no module {name}"
                elif "/" in name:
                    assert (ROOT / name).exists(), f"{ref}: no file {name}"


def test_every_generator_cites_a_seed_section():
    for c in citers():
        if c.kind == "generators":
            assert sections(c.source), f"generator {c.name} cites no seed section: {c.source!r}"


def _coverage() -> str:
    text = SOURCES_MD.read_text(encoding="utf-8")
    start = text.index("## Seed coverage")
    return text[start : text.index("\n## ", start + 1)]


def test_every_code_and_generator_the_seed_coverage_names_exists():
    from archkit.codes import catalogue
    from archkit.generators.registry import all_generators

    section = _coverage()
    codes = set(catalogue())
    named = set(re.findall(r"\b(?:AK|VK|VT|VP|VC|VS|VL|LT)\d{3}\b", section))
    for a, b in re.findall(r"\b([A-Z]{2}\d{3})–([A-Z]{2}\d{3})\b", section):
        named |= {a, b}
    assert named, "the seed-coverage section names no code"
    assert named <= codes, (
        f"docs/sources.md's seed coverage names codes that do not exist: {sorted(named - codes)}"
    )
    generators = set(re.findall(r"the `([a-z0-9_-]+)` generator", section))
    assert generators <= set(all_generators()), sorted(generators - set(all_generators()))


def test_seed_coverage_rows_are_well_formed_and_each_item_once():
    rows = [line for line in _coverage().splitlines() if re.match(r"\| \d+ \|", line)]
    numbers = [int(r.split("|")[1]) for r in rows]
    assert numbers == sorted(set(numbers)), "items out of order or repeated"
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 5, row
        assert re.fullmatch(r"00[04] §\d+(\.\d+)?", cells[1]), row
        assert cells[3] in {"✓", "h32-rules", "open", "out"}, row
        assert cells[4], f"item {cells[0]} says nothing: {row}"
        if cells[3] == "✓":
            assert re.search(r"\b[A-Z]{2}\d{3}\b|`[a-z0-9_]+` generator|`[a-z_.\[\]]+`", cells[4]), (
                f"item {cells[0]} is ✓ but names nothing that enforces it"
            )
