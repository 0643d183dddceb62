"""`archkit runbook`: the plan runs nothing; --run runs commands as written, judges, stops at the first cause."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.runbook import RunbookError, judge, plan, walk
from archkit.spec import load_file

TREE = """\
apiVersion: archkit/v1
metadata: {{name: walk-test, owners: [oncall@example.test]}}
faulttrees:
  - id: t
    top: top
    gates:
      - {{id: top, type: or, inputs: [first, second, third]}}
    events:
      - id: first
        label: first check
        check: "printf 'status 200\\\\n'; touch {marker}-first"
        expect: "200"
        probability: 0.3
      - id: second
        label: second check
        check: "{second}"
        expect_regex: "^ready$"
        expect_exit_code: 0
        probability: 0.2
        mismatch_means: the service is not ready
        remedy: restart it
        timeout_s: {timeout}
      - id: third
        label: third check
        check: "touch {marker}-third"
        expect_exit_code: 0
        probability: 0.1
"""


def _spec(tmp_path: Path, second: str = "echo ready", timeout: float = 5):
    path = tmp_path / "spec.yaml"
    path.write_text(TREE.format(marker=tmp_path / "ran", second=second, timeout=timeout), encoding="utf-8")
    res = load_file(path)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return path, res.spec


def test_plan_orders_checks_and_runs_nothing(tmp_path):
    _, spec = _spec(tmp_path)
    report = plan(spec, "t")
    assert [s.event for s in report.steps] == ["first", "second", "third"]
    assert not report.ran and not report.results
    assert not list(tmp_path.glob("ran-*"))


def test_walk_all_healthy_runs_every_check(tmp_path):
    _, spec = _spec(tmp_path)
    report = walk(spec, "t")
    assert [r.status for r in report.results] == ["healthy", "healthy", "healthy"]
    assert report.cause is None
    assert (tmp_path / "ran-first").exists() and (tmp_path / "ran-third").exists()


def test_walk_stops_at_first_confirmed_cause(tmp_path):
    _, spec = _spec(tmp_path, second="echo starting")
    started = []
    report = walk(spec, "t", on_start=lambda step, total: started.append(step.event))
    assert report.cause == "second"
    assert started == ["first", "second"]
    assert report.results[-1].reason == "output does not match /^ready$/"
    assert not (tmp_path / "ran-third").exists()  # nothing after the cause runs


def test_exit_code_and_timeout_confirm_the_event(tmp_path):
    _, spec = _spec(tmp_path, second="echo ready; exit 3")
    assert walk(spec, "t").results[1].reason == "exit code 3, expected 0"
    _, spec = _spec(tmp_path, second="sleep 30 | cat", timeout=0.5)
    t0 = time.monotonic()
    report = walk(spec, "t")
    assert time.monotonic() - t0 < 10  # the whole process group is killed, pipes and all
    assert report.cause == "second" and report.results[1].timed_out
    assert report.results[1].reason == "timed out after 0.5 s"


def test_timeout_option_overrides_each_check(tmp_path):
    _, spec = _spec(tmp_path)
    assert {s.timeout_s for s in plan(spec, "t", timeout_s=2).steps} == {2}


def test_judge_needs_every_declared_expectation(tmp_path):
    _, spec = _spec(tmp_path)
    step = plan(spec, "t").steps[1]
    assert judge(step, "ready\n", 0, False)[0]
    assert not judge(step, "ready\n", 1, False)[0]
    assert not judge(step, "not ready\n", 0, False)[0]


def test_unknown_tree_is_an_error(tmp_path):
    _, spec = _spec(tmp_path)
    with pytest.raises(RunbookError, match="no fault tree 'nope'"):
        plan(spec, "nope")


# ---------------------------------------------------------------- the CLI


@pytest.fixture(scope="module")
def cli():
    _load_commands()
    return CliRunner()


def test_cli_without_run_prints_plan_and_runs_nothing(cli, tmp_path):
    path, _ = _spec(tmp_path)
    res = cli.invoke(app, ["runbook", str(path), "--tree", "t"])
    assert res.exit_code == 0, res.output
    assert "Nothing runs without --run" in res.output and "1. first check (first)" in res.output
    assert not list(tmp_path.glob("ran-*"))


def test_cli_run_prints_each_command_before_its_result_and_the_remedy(cli, tmp_path):
    path, _ = _spec(tmp_path, second="echo starting")
    res = cli.invoke(app, ["runbook", str(path), "--tree", "t", "--run"])
    assert res.exit_code == 1, res.output
    out = res.output
    assert out.index("$ echo starting") < out.index("MISMATCH") < out.index("Remedy: restart it")
    assert "Cause confirmed: second check (second)" in out and "Means: the service is not ready" in out


def test_cli_run_all_healthy_exits_zero(cli, tmp_path):
    path, _ = _spec(tmp_path)
    res = cli.invoke(app, ["runbook", str(path), "--run"])
    assert res.exit_code == 0, res.output
    assert "No cause confirmed among 3 check(s); escalate to oncall@example.test" in res.output


def test_cli_json(cli, tmp_path):
    path, _ = _spec(tmp_path, second="echo starting")
    res = cli.invoke(app, ["runbook", str(path), "--run", "--format", "json"])
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["cause"] == "second" and doc["remedy"] == "restart it"
    assert [r["status"] for r in doc["results"]] == ["healthy", "cause"]


def test_cli_errors_are_one_line_exit_two(cli, tmp_path):
    path, _ = _spec(tmp_path)
    res = cli.invoke(app, ["runbook", str(path), "--tree", "nope"])
    assert res.exit_code == 2 and "archkit: no fault tree 'nope'; the spec has: t" in res.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: archkit/v1\nmetadata: {name: x}\nfaulttrees: [{id: 1}]\n", encoding="utf-8")
    res = cli.invoke(app, ["runbook", str(bad)])
    assert res.exit_code == 2 and res.output.startswith("archkit: ") and "Traceback" not in res.output


def test_ctrl_c_stops_the_running_check(tmp_path):
    """A KeyboardInterrupt during a check kills the check's process group (it runs in its own session)."""
    import os
    import signal

    from archkit.runbook import run_check

    pidfile = tmp_path / "pid"

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_check(f"echo $$ > {pidfile}; sleep 30", 60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
