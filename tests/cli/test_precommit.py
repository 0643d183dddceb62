"""The pre-commit hooks in .pre-commit-hooks.yaml, run by the real pre-commit on a sample repository.

pre-commit clones this repository at HEAD and installs it into its own environment (from the
package index pip is configured with), as it would for any user of the hooks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT

PRE_COMMIT = ROOT / ".venv" / "bin" / "pre-commit"
JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"


def _git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(
    not PRE_COMMIT.is_file() or not JAR.is_file(), reason="needs make setup (pre-commit, jar)"
)
def test_hooks_pass_on_a_sample_repository_and_catch_a_stale_render(tmp_path):
    rev = _git(ROOT, "rev-parse", "HEAD")
    if "archkit-render-check" not in _git(ROOT, "show", f"{rev}:.pre-commit-hooks.yaml"):
        pytest.skip("the hooks file is not committed yet")
    repo = tmp_path / "sample"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.test")
    _git(repo, "config", "user.name", "t")
    shutil.copyfile(ROOT / "specs" / "ocr-reference.yaml", repo / "archkit.yaml")
    (repo / ".pre-commit-config.yaml").write_text(
        f"""repos:
  - repo: {ROOT}
    rev: {rev}
    hooks:
      - id: archkit-check
      - id: archkit-render-check
        args: [archkit.yaml, -o, docs/architecture]
""",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), ARCHKIT_PLANTUML_JAR=str(JAR), NO_COLOR="1")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(PRE_COMMIT), "run", *args, "--all-files", "--color", "never"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    # the outputs are rendered by the hook's own archkit (`archkit-render`), then committed
    (repo / ".pre-commit-config.yaml").write_text(
        (repo / ".pre-commit-config.yaml").read_text()
        + "      - id: archkit-render\n        args: [archkit.yaml, -o, docs/architecture]\n",
        encoding="utf-8",
    )
    _git(repo, "add", "-A")
    first = run("archkit-render")
    assert (repo / "docs" / "architecture" / "review.html").is_file(), first.stdout + first.stderr
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "spec and its rendered outputs")
    ok = run()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "archkit check" in ok.stdout and "archkit render --check" in ok.stdout
    # a spec change without re-rendering: the drift gate fails and names a stale file
    spec = repo / "archkit.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("name: ocr-reference", "name: ocr-renamed", 1), encoding="utf-8")
    stale = run("archkit-render-check")
    assert stale.returncode == 1 and "stale:" in stale.stdout, stale.stdout + stale.stderr
