"""Large specs stay legible: the data flow folds into rows and renders within sane bounds."""

from __future__ import annotations

import importlib.util
import io

import pytest
from tests.conftest import ROOT
from tests.generators.diagram_helpers import diagram_sources

from archkit.generators.gen_dataflow import ROW_DEPTHS, flow_depths
from archkit.generators.renderers import render_sources
from archkit.spec.model import Spec


def _synthetic(n: int) -> Spec:
    spec = importlib.util.spec_from_file_location("bench_render", ROOT / "bench" / "bench_render.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return Spec.model_validate(mod.synthetic_spec(n))


def test_flow_depths_longest_path_and_cycles():
    assert flow_depths(["a", "b", "c", "d"], [("a", "b"), ("b", "c"), ("a", "c")]) == {
        "a": 0,
        "b": 1,
        "c": 2,
        "d": 0,
    }
    cyc = flow_depths(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "b")])
    assert cyc["a"] == 0 and set(cyc) == {"a", "b", "c"}  # a cycle (AK104) does not hang or drop stages


@pytest.mark.slow
def test_200_stage_dataflow_folds_into_rows_and_renders():
    from PIL import Image

    src = diagram_sources(_synthetic(200))["dataflow.dot"]
    assert src.count("rank=same") == 200 // ROW_DEPTHS  # the synthetic pipeline is 200 depths deep
    png = render_sources({"dataflow.dot": src}, ("png",))["dataflow.png"]
    w, h = Image.open(io.BytesIO(png)).size
    # one long column was 798 x 24,822 px; folded it must stay within a screen-scrollable page
    assert w < 4000 and h < 6000 and h / w < 3, (w, h)
