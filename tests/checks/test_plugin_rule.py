"""A third-party rule, installed the way a distribution ships one: the `archkit.rules` entry point.

This follows docs/development.md ("Adding a rule" as a plug-in): one module with a `Rule` subclass,
and a distribution's entry point naming it. The distribution is a real `.dist-info` folder on
sys.path, found by importlib.metadata like an installed wheel.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from archkit import api
from archkit.checks import registry

PLUGIN = '''
"""archkit_ownership: every spec names at least two owners (a bus factor above one)."""

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings
from archkit.diagnostics import Diagnostic, Severity


class TooFewOwners(Rule):
    """The spec names fewer owners than the team's minimum."""

    code = "AK791"
    name = "too-few-owners"
    severity = Severity.WARNING
    source = "a team's own practice (this test)"
    rationale = "An alert nobody can be paged for is noise."

    class Settings(RuleSettings):
        min_owners: int = Field(2, ge=1, description="owners a spec must name")

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        want = ctx.settings(self.Settings).min_owners
        meta = ctx.spec.metadata
        if len(meta.owners) < want:
            yield ctx.at(meta, "owners" if meta.owners else "name", f"{len(meta.owners)} owner(s), want {want}")
'''

SPEC = """\
apiVersion: archkit/v1
metadata: {name: t, owners: [ana]}
"""


@pytest.fixture
def ownership_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "archkit_ownership.py").write_text(PLUGIN, encoding="utf-8")
    info = tmp_path / "archkit_ownership-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: archkit-ownership\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [archkit.rules]
            too-few-owners = archkit_ownership:TooFewOwners
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    # the built-ins loaded, then a copy of the registry for this test: the entry point is read
    # again and the rule forgotten afterwards
    registry.all_rules()
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_LOADED", False)


def test_an_entry_point_rule_runs_is_configurable_and_explained(ownership_plugin, tmp_path: Path) -> None:
    assert "AK791" in registry.all_rules()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    found = [d for d in api.check([spec]).diagnostics if d.code == "AK791"]
    assert [(d.line, d.col, d.message) for d in found] == [(2, 29, "1 owner(s), want 2")]
    spec.write_text(SPEC + "checks: {settings: {AK791: {min_owners: 1}}}\n", encoding="utf-8")
    assert not [d for d in api.check([spec]).diagnostics if d.code in ("AK791", "AK113")]
    assert "min_owners = 2  owners a spec must name" in (api.explain("AK791") or "")
