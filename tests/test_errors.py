"""One error base: every archkit exception is an ArchkitError, and one table maps them to exit codes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from typer.testing import CliRunner

import archkit
from archkit.cli import _load_commands, app
from archkit.cli.output import EXIT_CODES, exit_code
from archkit.errors import ArchkitError, InputError, SpecLoadError, UnknownEnvironmentError
from archkit.plans import prepare
from tests.conftest import ROOT

BROKEN = ROOT / "tests" / "spec" / "broken" / "three-errors.yaml"
SPEC = ROOT / "specs" / "ocr-reference.yaml"
# the load generator's process module patches sockets (gevent) when imported: not imported here
NOT_IMPORTED = {"archkit.loadtest.worker", "archkit.__main__", "archkit.cli.__main__"}
# the runtime the locustfile wires (it imports locust, which monkey-patches threads: importing it
# beside other tests' threads deadlocked a pytest-xdist worker on the import lock)
NOT_IMPORTED_PACKAGES = ("archkit.loadtest.runtime",)


def _modules(path, prefix):
    """pkgutil.walk_packages, but never importing a package it skips (walk_packages imports every
    package to recurse, and the load-test runtime's __init__ imports locust)."""
    for mod in pkgutil.iter_modules(path, prefix):
        if mod.name.startswith(NOT_IMPORTED_PACKAGES):
            continue
        yield mod
        if mod.ispkg:
            yield from _modules(importlib.import_module(mod.name).__path__, mod.name + ".")


def _exception_classes() -> list[type[BaseException]]:
    found = []
    for mod in _modules(archkit.__path__, "archkit."):
        if mod.name in NOT_IMPORTED:
            continue
        module = importlib.import_module(mod.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.name:
                found.append(obj)
    return found


def test_every_exception_class_in_archkit_derives_from_the_base() -> None:
    classes = _exception_classes()
    assert len(classes) > 10
    # verify's internal stall signal never leaves its module (caught where it is raised)
    outside = [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, ArchkitError)]
    assert outside == [] or outside == ["archkit.verify.triton._Stalled"], outside


def test_the_exit_code_table_input_problems_2_failures_1() -> None:
    assert EXIT_CODES[0] == (InputError, 2)
    for cls in _exception_classes():
        if issubclass(cls, ArchkitError):
            assert exit_code(cls.__new__(cls)) == (2 if issubclass(cls, InputError) else 1), cls
    assert exit_code(RuntimeError("not ours")) == 1


def test_prepare_raises_the_load_error_with_every_diagnostic() -> None:
    with pytest.raises(SpecLoadError) as info:
        prepare(BROKEN)
    assert len([d for d in info.value.diagnostics if d.severity.value == "error"]) == 2
    assert str(info.value).startswith(f"{info.value.file}:4:11: AK101 error")
    assert "(and 1 more error(s)" in str(info.value) and "\n" not in str(info.value)


def test_prepare_names_the_known_environments() -> None:
    with pytest.raises(UnknownEnvironmentError, match=r"environment 'nope' is not defined \(environments: "):
        prepare(SPEC, "nope")


@pytest.mark.parametrize(
    "args",
    [
        ["runbook", str(BROKEN)],
        ["loadtest", str(SPEC), "--env", "nope"],
        ["render", str(SPEC), "-o", "{tmp}", "--env", "nope", "--only", "locust"],
    ],
    ids=["runbook-broken-spec", "loadtest-unknown-env", "render-unknown-env"],
)
def test_input_problems_exit_2_with_one_line(args: list[str], tmp_path) -> None:
    _load_commands()
    res = CliRunner().invoke(app, [a.replace("{tmp}", str(tmp_path / "out")) for a in args])
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    lines = [line for line in res.output.splitlines() if line.startswith("archkit: ")]
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
