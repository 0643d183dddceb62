"""The simulation's event loop compiled by numba and as plain Python: the same outputs, bit for bit.

The loop (`perf/pipesim_loop`) runs the same source both ways; the plain-Python run is the
reference a compiled loop (or a split of it into parts, issue 27) must match, over every example
spec without an LLM stage and every environment, at a light and a saturating rate.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from archkit.perf import pipesim_kernel
from archkit.perf.pipeline import prepare
from archkit.perf.pipesim import simulate_pipeline
from archkit.spec import load_file

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "examples").glob("*.yaml")) + [ROOT / "specs" / "ocr-reference.yaml"]


def _digest(out: tuple[Any, ...]) -> str:
    h = hashlib.sha256()
    for x in out:
        h.update(np.ascontiguousarray(x).tobytes() if isinstance(x, np.ndarray) else repr(float(x)).encode())
    return h.hexdigest()


def _cases() -> list[tuple[str, str | None]]:
    cases: list[tuple[str, str | None]] = []
    for path in SPECS:
        spec = load_file(path).spec
        assert spec is not None
        if any(st.llm is not None for st in spec.dataflow.stages):
            continue  # an LLM stage is co-simulated outside this loop (`pipesim`, `perf/llm`)
        cases += [(path.name, env) for env in [None, *(e.id for e in spec.environments)]]
    return cases


@pytest.mark.parametrize(("name", "env"), _cases())
def test_compiled_loop_matches_plain_python(
    name: str, env: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = next(p for p in SPECS if p.name == name)
    spec, lm = prepare(load_file(path).spec, env)  # type: ignore[arg-type]
    seen: dict[bool, list[str]] = {True: [], False: []}

    def spy(fn: Any, compiled: bool) -> Any:
        def run(*args: Any) -> Any:
            out = fn(*args)
            seen[compiled].append(_digest(out))
            return out

        return run

    monkeypatch.setattr(pipesim_kernel, "run", spy(pipesim_kernel.run, True))
    monkeypatch.setattr(pipesim_kernel, "run_python", spy(pipesim_kernel.run_python, False))
    for rate in (1.0, 30.0):
        for compiled in (True, False):
            simulate_pipeline(spec, lm, rate, requests=300, seed=3, compiled=compiled)
    assert seen[True], "the loop did not run"
    assert seen[True] == seen[False]
