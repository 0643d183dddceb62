"""What each rule family reads is found in the rules' code (`archkit.checks.reads`), not kept by
hand: a rule that reads a section makes its family skip when that section is broken."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from archkit.checks import all_rules
from archkit.checks.reads import family_inputs, rule_reads
from archkit.checks.registry import run_partial
from archkit.spec import load_file

ROOT = Path(__file__).resolve().parents[2]

TOY = '''
from archkit.checks.registry import Context, Rule


def _helper(spec):
    return spec.slos or []


class Toy(Rule):
    """A toy rule that reads the SLOs through a helper and a stage by id."""

    code = "AK699"
    name = "toy"

    def check(self, ctx: Context):
        ctx.spec.stage("x")
        return [] if _helper(ctx.spec) else []
'''

DECLARED = '''
from archkit.checks.registry import Context, Rule


class Declared(Rule):
    """A toy rule whose read the code does not show."""

    code = "AK698"
    name = "declared"
    reads = frozenset({"policies"})

    def check(self, ctx: Context):
        return getattr(ctx.spec, "poli" + "cies") and []
'''


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy rules, one module each as rules are (not registered: the registry stays as it is)."""
    found = _module(tmp_path, monkeypatch, "ak699_toy", TOY)
    found.Declared = _module(tmp_path, monkeypatch, "ak698_declared", DECLARED).Declared
    return found


def test_a_rule_that_reads_a_section_puts_it_in_its_familys_inputs(toy) -> None:
    assert rule_reads(toy.Toy) == {"slos", "dataflow"}  # `.slos` in a helper, `.stage(...)` a lookup
    assert rule_reads(toy.Declared) == {"policies"}  # declared: `getattr` hides it from the code
    assert family_inputs([toy.Toy, toy.Declared]) == {"AK6": frozenset({"slos", "dataflow", "policies"})}


def test_the_families_read_what_their_rules_read() -> None:
    """The hand-kept table this replaces had drifted: AK606-AK608 read `slos`, AK225/AK226 `traffic`."""
    inputs = family_inputs(all_rules().values())
    assert {"slos", "observability", "dataflow"} <= inputs["AK6"]
    assert {"traffic", "budgets", "dataflow", "topology", "environments"} <= inputs["AK2"]
    assert "policies" in inputs["AK4"] and "policies" in inputs["AK5"]
    for code, rule in all_rules().items():
        assert rule_reads(rule) <= inputs[code[:3]]


def test_a_broken_section_skips_exactly_the_families_that_read_it() -> None:
    spec = load_file(ROOT / "examples" / "rag-chat.yaml").spec
    assert spec is not None
    inputs = family_inputs(all_rules().values())
    _, skipped = run_partial(spec, {"slos"})
    assert set(skipped) == {fam for fam, needs in inputs.items() if "slos" in needs and fam != "AK1"}
    assert skipped["AK6"] == ["slos"]
    _, skipped = run_partial(spec, set())
    assert skipped == {}
