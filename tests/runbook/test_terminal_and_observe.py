"""`archkit runbook` shows spec text as it runs (issue: terminal spoofing), and a walk reports
what it established: observed events, complete and one-short cut sets, re-ranked checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.faulttree.observe import observe
from archkit.runbook import walk
from archkit.runbook.terminal import has_hidden, shown
from archkit.spec import load_file

SPOOF = """\
apiVersion: archkit/v1
metadata: {{name: spoof}}
faulttrees:
  - id: t
    top: top
    gates: [{{id: top, type: or, inputs: [a]}}]
    events:
      - id: a
        label: "disk \\u202efull"
        check: "touch {marker} #\\r\\e[2K echo harmless"
        expect_exit_code: 0
        remedy: "reboot\\e[8m hidden"
        probability: 0.1
"""


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _load_commands()
    return CliRunner()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_escapes_control_bidi_and_ansi() -> None:
    assert shown("a\rb\x1b[2Kc\u202ed\u200be") == "a\\rb\\x1b[2Kc\\u202ed\\u200be"
    assert shown("line\nnext\tcol", keep="\n\t") == "line\nnext\tcol"
    assert shown("plain ascii, é, 中文, emoji 🙂") == "plain ascii, é, 中文, emoji 🙂"
    assert has_hidden("x\u2066y") and not has_hidden("x y")


def test_runbook_shows_what_run_executes(cli: CliRunner, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    spec = _write(tmp_path, SPOOF.format(marker=marker))
    command = load_file(spec).spec.faulttrees[0].events[0].check
    assert "\r" in command and "\x1b" in command  # the loader keeps them: they reach the shell
    plan = cli.invoke(app, ["runbook", str(spec)])
    assert plan.exit_code == 0, plan.output
    for raw in ("\r", "\x1b", "\u202e"):
        assert raw not in plan.output
    assert f"$ {shown(command)}" in plan.output
    assert "shown escaped" in plan.output
    assert "disk \\u202efull" in plan.output and "reboot\\x1b[8m hidden" in plan.output
    assert not marker.exists()
    ran = cli.invoke(app, ["runbook", str(spec), "--run"])
    assert marker.exists()  # executed as written: the escaped text is the command that ran
    for raw in ("\r", "\x1b", "\u202e"):
        assert raw not in ran.output
    assert f"$ {shown(command)}" in ran.output


AND_TREE = """\
apiVersion: archkit/v1
metadata: {{name: and-walk}}
faulttrees:
  - id: t
    top: top
    gates:
      - {{id: top, type: or, inputs: [single, both]}}
      - {{id: both, type: and, inputs: [primary, standby]}}
    events:
      - {{id: primary, check: "{primary}", expect_exit_code: 0, probability: 0.2}}
      - {{id: standby, check: "{standby}", expect_exit_code: 0, probability: 0.1}}
      - {{id: single, check: "true", expect_exit_code: 0, probability: 0.01}}
"""


def _and_spec(tmp_path: Path, primary: str, standby: str):
    res = load_file(_write(tmp_path, AND_TREE.format(primary=primary, standby=standby)))
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_one_input_of_an_and_gate_does_not_end_the_walk(tmp_path: Path) -> None:
    report = walk(_and_spec(tmp_path, "false", "false"), "t")
    assert [r.event for r in report.results][:1] == ["primary"]
    assert report.cause == "primary"
    assert report.observation is not None and report.observation.explained
    assert report.observation.complete == [["primary", "standby"]]
    assert "single" not in [r.event for r in report.results]  # explained: the walk stopped


def test_walk_reports_one_short_and_reranks(tmp_path: Path) -> None:
    spec = _and_spec(tmp_path, "false", "true")
    report = walk(spec, "t")
    obs = report.observation
    assert obs is not None and not obs.explained
    assert obs.failed == ["primary"] and "standby" in obs.healthy
    assert [r.event for r in report.results] == ["primary", "standby", "single"]
    assert obs.ruled_out == 2 and obs.remaining == 0 and obs.probability == 0
    assert obs.note is not None and "does not explain" in obs.note
    # after primary failed, standby is the check that can explain the failure
    tree = spec.faulttrees[0]
    first = observe(tree, {"primary": True})
    assert {"cut_set": ["primary", "standby"], "missing": "standby"} in first.one_short
    assert first.next_checks[0] == "standby"
    assert first.probability == pytest.approx(1 - (1 - 0.1) * (1 - 0.01))


def test_cli_prints_what_the_walk_established(cli: CliRunner, tmp_path: Path) -> None:
    _and_spec(tmp_path, "false", "false")
    out = cli.invoke(app, ["runbook", str(tmp_path / "spec.yaml"), "--run"])
    assert out.exit_code == 1
    assert "explained by the cut set {primary, standby}" in out.output
    assert "observed failed: primary, standby" in out.output
