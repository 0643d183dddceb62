"""`render --measured` input: a bad report is one located line (exit 2), read in bounded time."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from tests.conftest import EXAMPLES

from archkit.generators.measured import MeasuredError, load_report, read_measured


@pytest.mark.parametrize(
    "text,message",
    [
        (
            '{"stages": {\n  "a": {"p99_ms": NaN}}}',
            "r.json:2:19: NaN is not a number (JSON has no NaN or infinity)",
        ),
        ('{"end_to_end": {"p99_ms": -Infinity}}', "r.json:1:27: -Infinity is not a number"),
        ("<html>oops</html>", "r.json:1:1: not JSON: Expecting value"),
        ('{"stages": {"a": {"p99_ms": 4', "r.json:1:30: not JSON: Expecting ',' delimiter"),
        ("[" * 100_000, "r.json: JSON nests too deeply"),
        ('{"p99_ms": ' + "9" * 5000 + "}", "r.json: not usable JSON: Exceeds the limit"),
        ('{"a": "\udcff"}', None),
    ],
)
def test_bad_reports_are_located_errors(tmp_path, text, message):
    p = tmp_path / "r.json"
    if message is None:  # not UTF-8
        p.write_bytes(b'{"a": "\xff"}')
        message = "r.json:1: not UTF-8 text"
    else:
        p.write_text(text)
    with pytest.raises(MeasuredError) as err:
        load_report(p)
    assert str(err.value).startswith(str(p.parent) + "/" + message)


def test_dev_zero_and_folders_are_refused(tmp_path):
    with pytest.raises(MeasuredError, match="over the 16777216-byte limit for a load-test report"):
        load_report("/dev/zero")
    with pytest.raises(MeasuredError, match="is a directory"):
        load_report(tmp_path)


def test_non_finite_or_huge_numbers_are_not_figures():
    m = read_measured({"stages": {"a": {"p99_ms": 10**400, "p50_ms": 3}}, "end_to_end": {"p99_ms": math.inf}})
    assert m is not None and m.stages == {"a": {"p50_ms": 3.0}} and m.end_to_end == {}


def test_cli_says_one_line_and_exits_2(tmp_path):
    bad = tmp_path / "measured.json"
    bad.write_text('{"end_to_end": {"p99_ms": NaN}}')
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "archkit",
            "render",
            str(EXAMPLES[0]),
            "-o",
            str(tmp_path / "out"),
            "--measured",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().splitlines() == [
        f"archkit: --measured: {bad}:1:27: NaN is not a number (JSON has no NaN or infinity)"
    ]
    assert not (tmp_path / "out").exists()
