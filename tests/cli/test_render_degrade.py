"""`archkit render` with a renderer missing: everything else is written, what is not is named, no traceback.

Runs the real CLI in a subprocess whose PATH holds only links to the tools the case keeps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

SPEC = ROOT / "specs" / "ocr-reference.yaml"  # no check errors: the exit code is about rendering
JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"
ARCHKIT = ROOT / ".venv" / "bin" / "archkit"

pytestmark = pytest.mark.skipif(
    not JAR.is_file() or not shutil.which("dot") or not shutil.which("java"),
    reason="needs dot, java and the pinned jar (make setup) to take each away in turn",
)


def render(tmp_path: Path, *keep: str, **extra_env: str) -> tuple[subprocess.CompletedProcess, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in keep:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {k: v for k, v in os.environ.items() if k != "PATH"}
    env.update(PATH=str(bin_dir), ARCHKIT_PLANTUML_JAR=str(JAR), NO_COLOR="1", **extra_env)
    out = tmp_path / "out"
    proc = subprocess.run(
        [str(ARCHKIT), "render", str(SPEC), "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    return proc, out


def test_without_java_the_control_flow_is_drawn_by_graphviz(tmp_path):
    proc, out = render(tmp_path, "dot")
    assert proc.returncode == 0, proc.stderr
    svg = (out / "controlflow.svg").read_text(encoding="utf-8")
    assert "drawn by Graphviz" in svg and "PlantUML (Java) is not available here" in svg
    assert "controlflow.puml: drawn by Graphviz instead of PlantUML: no Java runtime on PATH" in proc.stderr
    assert "default-jre-headless" in proc.stderr  # the package to install
    for name in ("dataflow.svg", "dataflow.png", "topology.svg", "controlflow.png", "review.html"):
        assert (out / name).is_file(), name
    assert list((out / "faulttree").glob("*.svg"))
    assert "drawn by Graphviz" in (out / "review.html").read_text(encoding="utf-8")


def test_without_dot_the_rest_is_written_and_the_package_named(tmp_path):
    proc, out = render(tmp_path, "java")
    assert proc.returncode == 1, proc.stderr
    assert f"not rendered: {out / 'dataflow.svg'}" in proc.stderr
    assert "install graphviz (Debian/Ubuntu: sudo apt-get install -y graphviz" in proc.stderr
    assert "not rendered" in proc.stdout  # the summary line counts them
    assert not (out / "dataflow.svg").exists() and (out / "dataflow.dot").is_file()
    assert (out / "controlflow.svg").is_file()  # PlantUML still ran
    review = (out / "review.html").read_text(encoding="utf-8")
    assert "dataflow.dot: not rendered" in review and "controlflow" in review
    assert (out / "runbooks").is_dir() and (out / "prometheus").is_dir()


def test_with_neither_renderer_the_text_outputs_and_review_page_are_still_written(tmp_path):
    proc, out = render(tmp_path)
    assert proc.returncode == 1
    assert "not rendered" in proc.stderr and not list(out.rglob("*.svg"))
    assert (out / "review.html").is_file() and (out / "controlflow.puml").is_file()


def test_without_the_diagrams_package_the_topology_names_the_extra(tmp_path):
    """`pip install archkit` without [render]: a `diagrams` package that cannot be imported stands in."""
    shadow = tmp_path / "shadow" / "diagrams"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("diagrams is not installed here")\n')
    proc, out = render(tmp_path, "dot", "java", PYTHONPATH=str(shadow.parent))
    assert proc.returncode == 1
    assert "not rendered" in proc.stderr and "pip install 'archkit[render]'" in proc.stderr
    assert "not drawn" in (out / "topology.svg").read_text(encoding="utf-8")
    assert (out / "dataflow.svg").is_file() and (out / "controlflow.svg").is_file()
    assert "pip install" in (out / "review.html").read_text(encoding="utf-8")
