"""Shared helpers for the diagram tests: build the four diagrams' sources of a spec in memory."""

from __future__ import annotations

from pathlib import Path

from archkit import api
from archkit.generators import RenderContext, all_generators
from archkit.spec.model import Spec

DIAGRAMS = ("dataflow", "controlflow", "topology", "faulttree")


def context(spec: Spec, spec_path: str = "spec.yaml", **kw) -> RenderContext:
    return RenderContext(spec=spec, spec_path=spec_path, diagnostics=api.check_spec(spec), **kw)


def diagram_sources(spec: Spec, spec_path: str = "spec.yaml", **kw) -> dict[str, str]:
    """{relative path: DOT or PlantUML source} of the four diagram generators."""
    ctx = context(spec, spec_path, **kw)
    gens = all_generators()
    out: dict[str, str] = {}
    for name in DIAGRAMS:
        out.update(gens[name].fn(ctx))
    return out


def load(path: Path) -> Spec:
    res = api.load(path)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec
