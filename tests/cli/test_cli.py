"""The command line: exit codes, formats (text, JSON, SARIF 2.1.0), init, and a light start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest
from typer.testing import CliRunner

from archkit import __version__
from archkit.cli import _load_commands, app
from archkit.cli import output as cli_output
from tests.conftest import ROOT

_load_commands()
runner = CliRunner()
STARTER = str(ROOT / "src/archkit/starter.yaml")
THREE = str(ROOT / "tests/spec/broken/three-errors.yaml")


def run(*args, **kw):
    return runner.invoke(app, list(args), **kw)


def test_version():
    res = run("--version")
    assert res.exit_code == 0 and res.output.strip() == f"archkit {__version__}"


def test_check_exit_codes():
    assert run("check", STARTER).exit_code == 0
    res = run("check", THREE)
    assert res.exit_code == 1
    assert "three-errors.yaml:11:26: AK103 error stage 'recognise' is not defined" in res.output
    assert "1 file(s) checked: 3 error(s)," in res.output.splitlines()[-1]
    # the rule groups that read the broken budgets are named as skipped, not silently dropped
    assert "AK100 info rule group AK2* (latency and capacity) not run: budgets did not load" in res.output


def test_check_json():
    res = run("check", "--format", "json", THREE)
    data = json.loads(res.output)
    errors = [d for d in data["diagnostics"] if d["severity"] == "error"]
    assert [d["code"] for d in errors] == ["AK101", "AK101", "AK103"]
    assert errors[2]["line"] == 11 and errors[2]["path"] == "dataflow.edges[0].to"


def test_check_sarif_validates_against_the_sarif_2_1_0_schema():
    res = run("check", "--format", "sarif", THREE, STARTER)
    log = json.loads(res.output)
    schema = json.loads((ROOT / "tests/data/sarif-2.1.0.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    results = [r for r in log["runs"][0]["results"] if r["level"] == "error"]
    assert len(results) == 3
    loc = results[2]["locations"][0]["physicalLocation"]
    assert loc["region"] == {"startLine": 11, "startColumn": 26}
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


def test_select_and_ignore():
    res = run("check", "--format", "json", "--ignore", "AK103", THREE)
    found = json.loads(res.output)["diagnostics"]
    assert [d["code"] for d in found if d["severity"] == "error"] == ["AK101", "AK101"]
    res = run("check", "--format", "json", "--select", "AK2", STARTER)
    assert all(d["code"].startswith("AK2") for d in json.loads(res.output)["diagnostics"])


def test_rules_and_explain():
    res = run("rules")
    assert res.exit_code == 0 and "AK103" in res.output
    meta = json.loads(run("rules", "--format", "json").output)
    assert "AK104" in meta and meta["AK104"]["summary"]
    res = run("explain", "ak107")
    assert res.exit_code == 0 and "Source: seed 000 §3.2" in res.output
    res = run("explain", "AK999")
    assert res.exit_code == 2 and "no rule" in res.output


def test_init_writes_a_valid_spec_and_never_overwrites(tmp_path):
    target = tmp_path / "svc.yaml"
    assert run("init", str(target)).exit_code == 0
    assert run("check", str(target)).exit_code == 0
    before = target.read_bytes()
    res = run("init", str(target))
    assert res.exit_code == 2 and "already exists" in res.output
    assert target.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name != "svc.yaml"], "temp files left behind"


def test_init_from_an_example(tmp_path):
    res = run("init", "--list")
    assert "recommendation" in res.output.split()
    target = tmp_path / "reco.yaml"
    assert run("init", str(target), "--example", "recommendation").exit_code == 0
    written, original = target.read_text(), (ROOT / "examples/recommendation.yaml").read_text()
    assert written.partition("\n")[2] == original.partition("\n")[2]
    assert written.startswith("# yaml-language-server: $schema=https://")
    res = run("init", str(tmp_path / "x.yaml"), "--example", "nope")
    assert res.exit_code == 2 and "no example 'nope'" in res.output


def test_schema_command_prints_the_committed_schema():
    res = run("schema")
    assert res.output == (ROOT / "specs/archkit.schema.json").read_text()


def test_colour_only_on_a_terminal(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert cli_output.use_colour(Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not cli_output.use_colour(Tty())
    monkeypatch.delenv("NO_COLOR")

    class Pipe:
        def isatty(self):
            return False

    assert not cli_output.use_colour(Pipe())


def _exe(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "archkit.cli.__main__", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        **kw,
    )


def test_bad_input_never_prints_a_traceback(tmp_path):
    garbage = tmp_path / "garbage.yaml"
    garbage.write_bytes(bytes(range(256)) * 4)
    for args in (
        ["check", str(garbage)],
        ["check", str(tmp_path)],
        ["check", str(tmp_path / "nope.yaml")],
        ["check", "--format", "bogus", STARTER],
        ["explain"],
    ):
        res = _exe(*args)
        assert res.returncode in (1, 2), (args, res.stderr)
        assert "Traceback" not in res.stdout + res.stderr, (args, res.stderr)


def test_help_does_not_import_heavy_clients():
    code = (
        "import sys\nfrom archkit.cli import main\nsys.argv=['archkit','--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy=[m for m in ('locust','kubernetes','tritonclient','gevent','matplotlib','diagrams')"
        " if m in sys.modules]\nprint('HEAVY', heavy)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert "HEAVY []" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("cmd", ["check", "rules", "explain", "schema", "init"])
def test_every_command_has_help(cmd):
    res = run(cmd, "--help")
    assert res.exit_code == 0 and "Usage" in res.output


def test_written_files_get_ordinary_permissions(tmp_path):
    """Atomic writes go through mkstemp (0600); the result must read like any new file."""
    import stat

    from archkit.api import write_tree

    old = os.umask(0o022)
    try:
        target = tmp_path / "svc.yaml"
        assert run("init", str(target)).exit_code == 0
        write_tree(tmp_path / "out", {"a.txt": "x"})
    finally:
        os.umask(old)
    for p in (target, tmp_path / "out" / "a.txt"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
