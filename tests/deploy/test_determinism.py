"""The deployables are deterministic: byte-identical twice, and across processes with different
hash seeds (set and dict order must not leak into a file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archkit import api
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.deploy.helpers import load_spec

SPECS = EXAMPLES + REFERENCE_SPECS
DEPLOYABLES = ["triton", "kubernetes", "k6", "chaosmesh", "config", "stubs"]


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_twice_in_one_process(spec_file: Path) -> None:
    spec = load_spec(spec_file)
    first, _ = api.generate(spec, spec_file.name, only=DEPLOYABLES, formats=())
    second, _ = api.generate(load_spec(spec_file), spec_file.name, only=DEPLOYABLES, formats=())
    assert first == second and first


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_across_processes_with_different_hash_seeds(tmp_path: Path) -> None:
    spec = next(p for p in EXAMPLES if p.stem == "loan-preapproval")
    trees = []
    for seed in ("1", "2"):
        out = tmp_path / seed
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT / "src"))
        cmd = [
            sys.executable,
            "-m",
            "archkit",
            "render",
            str(spec),
            "-o",
            str(out),
            "--only",
            ",".join(DEPLOYABLES),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr  # 1: the example's deliberate check errors
        trees.append(_tree(out))
    assert trees[0] == trees[1]
    assert any(name.startswith("stubs/") for name in trees[0])
