"""The wheel ships every template of generators/ as archkit/_generators/..."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from tests.conftest import ROOT


@pytest.mark.slow
def test_wheel_contains_every_template(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("archkit-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(
        p.relative_to(ROOT / "generators").as_posix() for p in (ROOT / "generators").rglob("*.j2")
    )
    assert templates, "no templates found in generators/"
    missing = [t for t in templates if f"archkit/_generators/{t}" not in names]
    assert not missing, missing
    for mine in (
        "dataflow/dataflow.dot.j2",
        "controlflow/controlflow.puml.j2",
        "faulttree/faulttree.dot.j2",
        "review/review.html.j2",
    ):
        assert f"archkit/_generators/{mine}" in names
    assert "archkit/generators/renderers.py" in names
