"""The locust generator: golden files per example, compiled, every spec string escaped."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archkit import api
from archkit.spec import load_file
from archkit.spec.model import Spec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "specs").glob("*.yaml"))
SPECS = [p for p in EXAMPLES if "loadtest:" in p.read_text(encoding="utf-8")]


def _locustfile(spec: Spec, name: str = "spec.yaml") -> str:
    files, _ = api.generate(spec, name, only=["locust"])
    return files["locust/locustfile.py"]


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_compiles(path: Path) -> None:
    """The locustfile is valid Python (its text is in the golden tree, test_golden_tree.py)."""
    res = load_file(path)
    assert res.spec is not None, res.diagnostics
    text = _locustfile(res.spec, str(path.relative_to(ROOT)))
    compile(text, "locustfile.py", "exec")


def _literal(text: str, name: str):
    """The value of a module-level `NAME = <literal>` assignment, evaluated without running the file."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not found")


def test_mix_levels_and_steps() -> None:
    spec = load_file(ROOT / "examples" / "recommendation.yaml").spec
    text = _locustfile(spec)
    scenarios = _literal(text, "SCENARIOS")
    assert [(s["id"], s["weight"], s["method"]) for s in scenarios] == [
        ("recommend", 80, "GET"),
        ("upload", 15, "POST"),
        ("config", 5, "PUT"),
    ]
    assert scenarios[1]["payload"] == {
        "template": '{"image": "base64..."}',
        "content_type": "application/json",
    }
    levels = _literal(text, "LEVELS")
    assert levels["stress"]["steps"] == [(0.0, 500.0), (30.0, 1000.0), (60.0, 1500.0), (90.0, 2000.0)]
    assert levels["baseline"]["rate_rps"] == 1000


def test_no_loadtest_section_gives_no_file() -> None:
    spec = Spec.model_validate({"apiVersion": "archkit/v1", "metadata": {"name": "x"}})
    files, _ = api.generate(spec, "x.yaml", only=["locust"])
    assert files == {}


text_st = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=text_st, header=text_st, template=text_st, model=text_st, host=text_st)
def test_any_spec_string_stays_inert(path, header, template, model, host) -> None:
    spec = Spec.model_validate(
        {
            "apiVersion": "archkit/v1",
            "metadata": {"name": "svc"},
            "loadtest": {
                "target": {"protocol": "http", "host": host},
                "scenarios": [
                    {
                        "id": "a",
                        "path": path,
                        "headers": {header: header},
                        "model": model,
                        "inputs": [{"name": model, "shape": [1, 2]}],
                        "outputs": [model],
                        "payload": {"template": template, "content_type": header},
                    }
                ],
                "levels": [{"id": "b", "kind": "baseline", "rate_rps": 3}],
            },
        }
    )
    text = _locustfile(spec)
    compile(text, "locustfile.py", "exec")
    sc = _literal(text, "SCENARIOS")[0]
    assert (sc["path"], sc["headers"], sc["model"], sc["outputs"]) == (path, {header: header}, model, [model])
    assert sc["payload"] == (
        {"template": template, "content_type": header} if header else {"template": template}
    )
    assert sc["inputs"] == [{"name": model, "datatype": "BYTES", "shape": [1, 2]}]
    assert _literal(text, "HOST") == host


TRITON_SHAPES = r"""
import json, sys
from gevent import monkey
monkey.patch_all()
ns = {}
exec(compile(open(sys.argv[1]).read(), "locustfile.py", "exec"), ns)
import tritonclient.http as tc
from archkit.loadtest.runtime.mix import TritonTensor
from archkit.loadtest.runtime.protocols.triton import triton_input
assert ns["ServiceUser"].__name__ == "TritonHttpUser"
cases = [([1, 2, 3, 3], "UINT8", 18), ([1, -1, 3], "UINT8", 12), ([-1, -1, 3], "UINT8", 12),
         ([], "BYTES", 3), ([1, 1], "BYTES", 1), ([1, -1], "FP32", 16)]
print(json.dumps([triton_input(tc, TritonTensor("x", d, tuple(s)), bytes(n)).shape() for s, d, n in cases]))
"""


def test_triton_inputs_take_the_declared_shape_when_the_payload_fits(tmp_path) -> None:
    """Runs the generated file (its user class is Triton's) and the runtime's tensor builder in their own
    interpreter: locust's gevent patching stays out of pytest."""
    import json
    import subprocess
    import sys

    spec = Spec.model_validate(
        {
            "apiVersion": "archkit/v1",
            "metadata": {"name": "t"},
            "loadtest": {
                "target": {"protocol": "triton-http", "host": "http://127.0.0.1:1"},
                "scenarios": [{"id": "a", "model": "m"}],
            },
        }
    )
    lf = tmp_path / "locustfile.py"
    lf.write_text(_locustfile(spec))
    out = subprocess.run(
        [sys.executable, "-c", TRITON_SHAPES, str(lf)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [
        [1, 2, 3, 3],
        [1, 4, 3],
        [1, 12],
        [1],
        [1, 1],
        [1, 4],
    ]
