"""One error isolation for every plug-in family (`archkit.isolation`): a toy plug-in that raises
becomes one located finding naming its kind and name, and the other plug-ins' outputs are still
produced — a rule's findings, a generator's files, a verify source's and a verify check's findings.
Exit codes follow `errors.py`: a finding that is an error exits 1, a user's input error exits 2.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from archkit import api
from archkit.checks import registry as rules
from archkit.checks.registry import Context, Rule
from archkit.cli import _load_commands, app
from archkit.diagnostics import Diagnostic
from archkit.errors import InputError
from archkit.generators import registry as generators
from archkit.isolation import MALFORMED, Failure, isolated
from archkit.spec import load_file
from archkit.verify import Status, run_inputs
from archkit.verify.registry import (
    Check,
    Code,
    Providers,
    Reading,
    Source,
    register_source,
    unregister_source,
)
from archkit.verify.source_checks import SourceContext
from tests.conftest import ROOT

SPEC = ROOT / "examples" / "industrial-inspection.yaml"
CLEAN = ROOT / "specs" / "ocr-reference.yaml"  # a spec the checks find no errors in
BUG = "a bug in a plug-in"

_load_commands()


# ------------------------------------------------------------------ the guard itself


def test_the_guard_returns_the_result_or_a_failure_naming_the_plugin() -> None:
    assert isolated("rule", "AK101", lambda: [1]) == [1]

    def multi_line() -> None:
        raise ValueError("first line\n  second line " + "x" * 500)

    failed = isolated("generator", "toy", multi_line)
    assert isinstance(failed, Failure)
    assert (failed.kind, failed.name, type(failed.error)) == ("generator", "toy", ValueError)
    assert failed.message.startswith("internal error in generator toy: ValueError: first line second line x")
    assert "\n" not in failed.message and len(failed.detail) == len("ValueError: ") + 200


def test_what_the_guard_does_not_catch_or_lets_pass_is_raised() -> None:
    def input_error() -> None:
        raise InputError("a template folder that is not one")

    with pytest.raises(InputError):
        isolated("generator", "toy", input_error, passes=(InputError,))
    with pytest.raises(RuntimeError):  # a verify check catches only a malformed answer
        isolated("verify check", "VX1", lambda: (_ for _ in ()).throw(RuntimeError(BUG)), catch=MALFORMED)
    with pytest.raises(KeyError):  # nothing caught: a caller that needs the output (strict)
        isolated("generator", "toy", lambda: {}["missing"], catch=())


# ------------------------------------------------------------------ rules


class Exploding(Rule):
    """A toy rule with a bug."""

    code = "AK797"
    name = "exploding"
    source = "this test"
    rationale = "none"

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        yield from ()
        raise ZeroDivisionError(BUG)


@pytest.fixture
def exploding_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    rules.all_rules()
    monkeypatch.setattr(rules, "_REGISTRY", dict(rules._REGISTRY))
    rules.register(Exploding)


def test_a_rule_that_raises_is_an_ak199_error_and_the_other_rules_still_report(exploding_rule) -> None:
    def others(diags: list[Diagnostic]) -> list[str]:
        return [d.text() for d in diags if d.code != "AK199"]

    found = api.check([SPEC]).diagnostics
    internal = [d for d in found if d.code == "AK199"]
    assert [(d.file, d.line, d.col, d.severity.value, d.message) for d in internal] == [
        (str(SPEC), 1, 1, "error", f"internal error in rule AK797: ZeroDivisionError: {BUG}")
    ]
    without = api.check([SPEC], ignore=["AK797"]).diagnostics
    assert others(found) == others(without) and others(found)  # every other rule's finding, as before
    res = CliRunner().invoke(app, ["check", str(SPEC), "--select", "AK797"])
    assert res.exit_code == 1, res.output
    assert "AK199 error internal error in rule AK797" in res.output


# ------------------------------------------------------------------ generators


@pytest.fixture
def broken_generators(monkeypatch: pytest.MonkeyPatch) -> None:
    generators.all_generators()
    monkeypatch.setattr(generators, "_REGISTRY", dict(generators._REGISTRY))

    @generators.register("broken-for-test")
    def broken(ctx: Any) -> dict[str, str]:
        """Fails as a bug in a plug-in would."""
        raise ZeroDivisionError(BUG)

    @generators.register("wrong-input-for-test")
    def wrong_input(ctx: Any) -> dict[str, str]:
        """Fails as a user's bad option does."""
        raise InputError("--templates: not a folder")


def test_a_generator_that_raises_is_an_ak199_error_and_the_other_files_are_written(
    broken_generators, tmp_path: Path
) -> None:
    alone = api.render(SPEC, tmp_path / "alone", only=["prometheus", "runbooks"], formats=())
    res = api.render(SPEC, tmp_path / "out", only=["broken-for-test", "prometheus", "runbooks"], formats=())
    internal = [d for d in res.diagnostics if d.code == "AK199"]
    assert [(d.file, d.line, d.message) for d in internal] == [
        (str(SPEC), 1, f"internal error in generator broken-for-test: ZeroDivisionError: {BUG}")
    ]
    assert sorted(res.files) == sorted(alone.files) and res.files  # the others' files, byte for byte
    for rel, content in alone.files.items():
        assert (tmp_path / "out" / rel).read_bytes() == (
            content if isinstance(content, bytes) else content.encode()
        )
    runner = CliRunner()
    good = runner.invoke(app, ["render", str(CLEAN), "-o", str(tmp_path / "good"), "--only", "prometheus"])
    assert good.exit_code == 0, good.output
    out = tmp_path / "cli"
    res_cli = runner.invoke(
        app, ["render", str(CLEAN), "-o", str(out), "--only", "broken-for-test,prometheus"]
    )
    assert res_cli.exit_code == 1, res_cli.output  # the broken generator's AK199 error
    assert "AK199" in res_cli.output
    assert (out / "prometheus" / "rules.yaml").read_bytes() == (
        tmp_path / "good" / "prometheus" / "rules.yaml"
    ).read_bytes()
    wrong = runner.invoke(
        app, ["render", str(CLEAN), "-o", str(tmp_path / "x"), "--only", "wrong-input-for-test"]
    )
    assert wrong.exit_code == 2, wrong.output  # the user's input, not a plug-in's bug: exit 2
    with pytest.raises(ZeroDivisionError):  # a caller that needs the output gets the error
        api.generate(load_file(SPEC).spec, str(SPEC), only=["broken-for-test"], formats=(), strict=True)


# ------------------------------------------------------------------ verify sources and checks


class Described(Check):
    """The spec's metadata carries a description."""

    code = Code("VW901", "described", "A service nobody described is hard to hand over.", "this test")


class Owned(Check):
    """The spec names an owner."""

    code = Code("VW902", "owned", "An alert nobody can be paged for is noise.", "this test")


class ToySource(Source):
    """A toy source whose input is a dict; `check` runs its two checks, each guarded."""

    name = "toy"
    title = "Toy"
    prefix = "VW"
    checks = (Described, Owned)

    def read(self, spec: Any, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return options

    def check(self, spec: Any, given: Any, timeout_s: float) -> Reading:
        ctx = SourceContext(spec, self.name)
        ctx.guarded(Described.code, "metadata", spec.metadata, lambda: self._run(ctx, given, "described"))
        ctx.guarded(Owned.code, "metadata", spec.metadata, lambda: self._run(ctx, given, "owned"))
        return Reading({"area": self.name}, ctx.rec.findings)

    @staticmethod
    def _run(ctx: SourceContext, given: dict[str, Any], what: str) -> None:
        code = Described.code if what == "described" else Owned.code
        if given[what] == "boom":
            raise RuntimeError(BUG)  # a bug, not a malformed answer
        ctx.rec.ok(code, "metadata", ctx.spec.metadata, f"{what}: {given[what]['value']}")


class BrokenSource(ToySource):
    name = "broken"
    prefix = "VV"

    class Broken(Check):
        """Never runs."""

        code = Code("VV901", "broken", "none", "this test")

    checks = (Broken,)

    def check(self, spec: Any, given: Any, timeout_s: float) -> Reading:
        raise KeyError(BUG)


@pytest.fixture
def toy_sources() -> Iterator[None]:
    register_source(ToySource)
    register_source(BrokenSource)
    try:
        yield
    finally:
        unregister_source(ToySource.name)
        unregister_source(BrokenSource.name)


GOOD = {"described": {"value": "yes"}, "owned": {"value": "ana"}}


def test_a_verify_source_that_raises_is_one_unknown_finding_and_the_other_sources_still_check(
    toy_sources,
) -> None:
    spec = load_file(SPEC).spec
    report = run_inputs(spec, {"broken": None, "toy": GOOD})
    found = [(f.area, f.code, f.status, f.message) for f in report.findings]
    assert found == [
        ("broken", "VV901", Status.UNKNOWN, f"internal error in verify source broken: KeyError: '{BUG}'"),
        ("toy", "VW901", Status.PASS, "described: yes"),
        ("toy", "VW902", Status.PASS, "owned: ana"),
    ]
    assert report.failed("unknown") and not report.failed("drift")  # `--fail-on unknown` exits 1


def test_a_verify_check_that_trips_over_a_malformed_answer_is_unknown_and_the_next_still_runs(
    toy_sources,
) -> None:
    spec = load_file(SPEC).spec
    report = run_inputs(spec, {"toy": {"described": ["not", "a", "dict"], "owned": {"value": "ana"}}})
    by_code = {f.code: f for f in report.findings}
    assert by_code["VW901"].status is Status.UNKNOWN
    assert by_code["VW901"].message == (
        "cannot check metadata (described): the source answered something malformed "
        "(TypeError: list indices must be integers or slices, not str)"
    )
    assert (by_code["VW902"].status, by_code["VW902"].message) == (Status.PASS, "owned: ana")
    # a check's bug (not a malformed answer) reaches its source's guard: one finding, not a crash
    bug = run_inputs(spec, {"toy": {"described": "boom", "owned": {"value": "ana"}}})
    assert [(f.code, f.status, f.message) for f in bug.findings] == [
        ("VW901", Status.UNKNOWN, f"internal error in verify source toy: RuntimeError: {BUG}")
    ]
