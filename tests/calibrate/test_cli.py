"""`archkit calibrate` refuses bad input with one line and exit 2, before any request is sent."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from tests.conftest import ROOT

SPEC = str(ROOT / "specs" / "ocr-reference.yaml")


@pytest.fixture
def cli():
    _load_commands()
    return lambda *args: CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    "args,message",
    [
        (["--triton", "http://10.1.2.3:8000"], "loopback"),
        (["--env", "h100"], "environment 'h100' is not defined"),
        (["--batch-sizes", "1,x"], "--batch-sizes expects comma-separated integers"),
        (["--concurrency", "0"], "--concurrency expects integers from 1 to 1024"),
        (["--token-file", "/nonexistent/token"], "cannot read the token file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, tmp_path, args, message) -> None:
    r = cli("calibrate", SPEC, "-o", str(tmp_path / "c.json"), *args)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert not (tmp_path / "c.json").exists()


def test_a_file_that_is_not_a_calibration_is_never_overwritten(cli, tmp_path) -> None:
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": true}')
    r = cli("calibrate", SPEC, "-o", str(mine), "--triton", "http://127.0.0.1:9")
    assert r.exit_code == 2 and "not overwritten" in r.output
    assert mine.read_text() == '{"mine": true}'


def test_no_triton_listening_is_a_clear_error(cli, tmp_path) -> None:
    r = cli(
        "calibrate", SPEC, "-o", str(tmp_path / "c.json"), "--triton", "http://127.0.0.1:9", "--budget-s", "5"
    )
    assert r.exit_code == 2 and "Triton" in r.output and "Traceback" not in r.output
