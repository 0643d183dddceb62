"""`-o FILE` never replaces what is there (a file or a symlink), and every command answers it alike: exit 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from tests.conftest import ROOT

_load_commands()
SPEC = ROOT / "specs" / "ocr-reference.yaml"
MEF = ROOT / "tests" / "faulttree" / "faulttrees" / "aralia" / "edf9202.xml"
COMMANDS = {
    "check": ["check", str(SPEC)],
    "faulttree import": ["faulttree", "import", str(MEF)],
    "faulttree export": ["faulttree", "export", str(SPEC), "--tree", "ocr-unavailable"],
    "slo export": ["slo", "export", str(SPEC)],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["file", "symlink", "dangling symlink"])
def test_an_existing_output_is_refused_alike(tmp_path, command, kind) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("mine\n")
    else:
        out.symlink_to(mine if kind == "symlink" else tmp_path / "nowhere")
    res = CliRunner().invoke(app, [*COMMANDS[command], "-o", str(out)])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert lines == [f"archkit: {out} already exists; not overwriting it (choose another path or remove it)"]
    assert mine.read_text() == "mine\n"
    assert out.is_symlink() is (kind != "file")
    if kind == "file":
        assert out.read_text() == "mine\n"


def test_a_new_output_is_written(tmp_path) -> None:
    out = tmp_path / "report.json"
    res = CliRunner().invoke(app, ["check", str(SPEC), "-f", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["summary"].startswith("0 error(s)")
