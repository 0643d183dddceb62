"""docs/checks.md is generated from the rule registry and must not go stale."""

from __future__ import annotations

from archkit.checks import all_rules
from archkit.checks.catalogue import markdown
from tests.conftest import ROOT

REGENERATE = ".venv/bin/python -m archkit.checks.catalogue docs/checks.md"


def test_docs_checks_md_is_current():
    committed = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    assert committed == markdown(), f"docs/checks.md is stale; regenerate it with: {REGENERATE}"


def test_catalogue_has_at_least_40_rules_each_with_rationale_and_seed_source():
    rules = all_rules()
    assert len(rules) >= 40
    semantic = [r for c, r in rules.items() if "AK2" <= c < "AK7"]
    assert len(semantic) >= 35
    for r in semantic:
        assert r.rationale.strip(), f"{r.code} has no rationale"
        assert "seed 00" in r.source, f"{r.code} does not cite a seed section: {r.source!r}"
        assert "§" in r.source, f"{r.code} cites no section: {r.source!r}"
        assert r.__doc__ and r.name, r.code


def test_every_rule_appears_in_the_markdown():
    text = markdown()
    for code in all_rules():
        assert f"### {code}" in text
