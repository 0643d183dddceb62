"""`archkit render` passes its options on, refuses foreign files and gates drift with --check."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT
from typer.testing import CliRunner

from archkit.cli import _load_commands, app

# a spec the checks find no errors in (the reference service's): render exits 1 when they do
SPEC = str(ROOT / "specs" / "ocr-reference.yaml")
RECO = str(next(p for p in EXAMPLES if p.stem == "recommendation"))
runner = CliRunner()
_load_commands()


def test_render_only_dataflow_then_check_and_drift(tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(
        app, ["render", SPEC, "-o", str(out), "--only", "dataflow", "--image-format", "svg,png"]
    )
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        ".archkit-manifest.json",
        "dataflow.dot",
        "dataflow.png",
        "dataflow.svg",
    ]
    r = runner.invoke(
        app, ["render", SPEC, "-o", str(out), "--only", "dataflow", "--image-format", "svg,png", "--check"]
    )
    assert r.exit_code == 0, r.output
    (out / "dataflow.dot").write_text("edited\n")
    r = runner.invoke(
        app, ["render", SPEC, "-o", str(out), "--only", "dataflow", "--image-format", "svg,png", "--check"]
    )
    assert r.exit_code == 1 and "stale:" in r.output and "dataflow.dot" in r.output


def test_render_refuses_a_users_file(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "dataflow.dot").write_text("mine\n")
    r = runner.invoke(app, ["render", SPEC, "-o", str(out), "--only", "dataflow"])
    assert r.exit_code == 1 and "refused" in r.output
    assert (out / "dataflow.dot").read_text() == "mine\n"


def test_bad_options_are_usage_errors(tmp_path):
    r = runner.invoke(app, ["render", SPEC, "-o", str(tmp_path), "--only", "nope"])
    assert r.exit_code == 2 and "no generator 'nope'" in r.output
    r = runner.invoke(app, ["render", SPEC, "-o", str(tmp_path), "--image-format", "gif"])
    assert r.exit_code == 2 and "gif" in r.output
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"nothing": 1}))
    r = runner.invoke(app, ["render", SPEC, "-o", str(tmp_path), "--measured", str(bad)])
    assert r.exit_code == 2 and "no stage or end-to-end latencies" in r.output


def test_user_template_overrides_one_builtin(tmp_path):
    tdir = tmp_path / "tpl" / "dataflow"
    tdir.mkdir(parents=True)
    (tdir / "dataflow.dot.j2").write_text("{{ header }}\ndigraph custom { a -> b }\n")
    out = tmp_path / "out"
    r = runner.invoke(
        app, ["render", SPEC, "-o", str(out), "--only", "dataflow", "--templates", str(tmp_path / "tpl")]
    )
    assert r.exit_code == 0, r.output
    assert "digraph custom" in (out / "dataflow.dot").read_text()
    assert (out / "dataflow.svg").read_text().startswith("<?xml")


def test_env_applies_that_environments_budgets(tmp_path):
    spec = tmp_path / "reco.yaml"
    spec.write_text(
        Path(RECO).read_text(encoding="utf-8")
        + (
            "environments:\n  - id: h200\n    budgets: {p99_ms: 777}\n    stages: [{stage: rank, p99_ms: 42}]\n"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    r = runner.invoke(
        app,
        ["render", str(spec), "-o", str(out), "--only", "dataflow", "--image-format", "svg", "--env", "h200"],
    )
    # the recommendation example has a check error: rendered, counted, exit 1
    assert r.exit_code == 1 and "error(s) found by the checks" in r.output, r.output
    dot = (out / "dataflow.dot").read_text()
    assert "P99 777 ms" in dot and "P50 25 ms · P99 42 ms" in dot
