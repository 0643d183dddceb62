"""A test-sized check rule, written the way docs/development.md ("Adding a rule") says.

The rule is one small class: its code, name, severity, source and rationale next to its check,
registered with `@register`. It then runs with the catalogue, its findings point at a line and
column, `select`/`ignore` apply to it, and `archkit explain` knows it. A real rule lives in
`src/archkit/checks/akNNN_name.py` with a fixture in `tests/checks/fixtures/AKNNN.yaml`; here it
is registered on a copy of the registry, so the catalogue is unchanged after the test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from archkit.checks import registry, run_rules
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata:
  name: t
  owners: []
"""


@pytest.fixture
def example_rule(monkeypatch: pytest.MonkeyPatch) -> type[Rule]:
    registry.all_rules()  # the built-in catalogue loaded, then a copy for this test
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register
    class NoOwners(Rule):
        """The spec names no owner, so nobody is paged and nobody signs off."""

        code = "AK698"
        name = "no-owners"
        severity = Severity.WARNING
        source = "seed 000 §6 (the self-check list is ticked by someone)"
        rationale = "Runbooks escalate to the owners; without one, escalation has nowhere to go."

        def check(self, ctx: Context) -> Iterator[Diagnostic]:
            if not ctx.spec.metadata.owners:
                yield ctx.at(ctx.spec.metadata, "owners", "metadata.owners is empty")

    return NoOwners


def test_the_rule_runs_with_the_catalogue_and_points_at_the_field(example_rule: type[Rule]) -> None:
    res = load_text(SPEC, "t.yaml")
    assert res.spec is not None
    found = [d for d in run_rules(res.spec) if d.code == "AK698"]
    assert [(d.file, d.line, d.col, d.severity) for d in found] == [("t.yaml", 4, 11, Severity.WARNING)]
    assert not [d for d in run_rules(res.spec, ignore=["AK6"]) if d.code == "AK698"]


def test_explain_and_the_catalogue_know_it(example_rule: type[Rule]) -> None:
    from archkit import api

    assert "AK698" in api.rules() and api.rules()["AK698"]["name"] == "no-owners"
    text = example_rule.explain()
    assert text.startswith("AK698 no-owners (warning") and "Source: seed 000 §6" in text


def test_a_duplicate_code_is_refused(example_rule: type[Rule]) -> None:
    with pytest.raises(registry.DuplicateRuleError):

        @register
        class Again(Rule):
            code = "AK698"
            name = "again"
