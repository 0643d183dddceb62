"""Shared by the deployables' tests: load a spec, render one generator's files into a folder."""

from __future__ import annotations

from pathlib import Path

from archkit import api
from archkit.render.tree import write_tree
from archkit.spec.model import Spec


def load_spec(path: Path) -> Spec:
    res = api.load(path)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def render_one(
    spec: Spec, generator: str, out: Path, spec_path: str = "spec.yaml", env: str | None = None
) -> Path:
    """Write what `generator` makes for `spec` under out; returns out/<generator's folder>."""
    files, _ = api.generate(spec, spec_path, only=[generator], formats=(), env=env)
    write_tree(out, files)
    folders = {rel.split("/", 1)[0] for rel in files}
    assert len(folders) == 1, folders
    return out / folders.pop()
