"""`archkit loadtest` input errors: exit 2 with `archkit: message`, no traceback, no traffic."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app

from .conftest import toy_spec


@pytest.fixture(scope="module")
def cli():
    _load_commands()
    return lambda *args: CliRunner().invoke(app, ["loadtest", *map(str, args)])


def test_spec_without_loadtest_section(cli, tmp_path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("apiVersion: archkit/v1\nmetadata: {name: s}\n")
    r = cli(spec)
    assert r.exit_code == 2 and "has no loadtest section" in r.output and "Traceback" not in r.output


def test_spec_that_does_not_load_names_the_line(cli, tmp_path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("apiVersion: archkit/v1\nmetadata: {name: s}\nbudgets: {p99_ms: fast}\n")
    r = cli(spec)
    assert r.exit_code == 2 and "s.yaml:3" in r.output and "budgets.p99_ms" in r.output


@pytest.mark.parametrize(
    "args,message",
    [
        (["--env", "gpu"], "environment 'gpu' is not defined"),
        (["--level", "soak"], "no level 'soak'"),
        (["--level", "chaos", "--service", "toy"], "--service expects NAME=PID"),
        (["--level", "chaos", "--service", "toy=999999999"], "process 999999999 is not running"),
        (["--master-host", "10.1.1.1", "--workers", "1"], "refusing to send load to locust master"),
    ],
)
def test_bad_options(cli, tmp_path, args, message) -> None:
    r = cli(toy_spec(tmp_path, 9), *args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output


def test_report_folder_with_foreign_files_is_refused(cli, tmp_path) -> None:
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep" / "mine.txt").write_text("x")
    r = cli(toy_spec(tmp_path, 9), "--report", tmp_path / "rep")
    assert r.exit_code == 2 and "not written by archkit loadtest" in r.output


def test_help_lists_the_levels(cli) -> None:
    r = cli("--help")
    assert r.exit_code == 0 and "baseline, stress, chaos" in r.output


def test_a_generator_that_fails_while_running_exits_1(cli, tmp_path, monkeypatch) -> None:
    """errors.py: a run that started and failed is exit 1 (an input error would be 2).

    The runner is replaced (a stand-in: making a real worker process fail on cue would test
    locust, not the exit code); everything before it, spec and plan included, is real.
    """
    from archkit.loadtest import session
    from archkit.loadtest.runner import RunError

    def broken(*_a, **_kw):
        raise RunError("the load generator did not start; see its log")

    monkeypatch.setattr(session, "run", broken)
    r = cli(toy_spec(tmp_path, 9), "--no-prometheus")
    assert r.exit_code == 1, r.output
    assert "the load generator did not start" in r.output and "Traceback" not in r.output


def test_the_command_line_becomes_one_options_object(cli, tmp_path, monkeypatch) -> None:
    from archkit import api

    seen = {}

    def fake(spec, level=None, *, options, report_dir, progress, **_kw):
        seen["options"] = options
        raise api.LoadtestError("stop here")

    monkeypatch.setattr(api, "loadtest", fake)
    r = cli(
        toy_spec(tmp_path, 9),
        "-l",
        "stress",
        "--rate",
        "7",
        "--arrival",
        "poisson",
        "--metrics",
        "http://127.0.0.1:1/m",
    )
    assert r.exit_code == 2 and "stop here" in r.output
    assert seen["options"] == api.LoadtestOptions(
        level="stress", rate=7.0, arrival="poisson", metrics=("http://127.0.0.1:1/m",)
    )


def test_unknown_option_names_are_input_errors() -> None:
    from archkit.errors import InputError
    from archkit.loadtest.options import LoadtestOptions

    with pytest.raises(InputError, match="unknown load-test option"):
        LoadtestOptions().with_(speed=3)


def test_streaming_measures_are_printed_one_line_each() -> None:
    from archkit.cli.cmd_loadtest import stream_lines

    ttft = {"p50_ms": 40.0, "p95_ms": 55.5, "p99_ms": 60.0, "count": 10}
    lines = stream_lines(
        {"ttft_ms": ttft, "chunks_per_token": {"output_tokens": 90, "content_chunks": 50, "ratio": 0.5556}}
    )
    assert lines == [
        "TTFT: P50 40.0 ms, P95 55.5 ms, P99 60.0 ms (n=10)",
        "streamed 90 output tokens in 50 chunks (0.5556 chunks per token)",
    ]
    assert stream_lines({}) == []
