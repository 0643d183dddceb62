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


def test_a_raster_is_scaled_into_its_pixel_budget_and_the_svg_is_not():
    """A fuzzed fault tree laid out at 8,790 x 15,094 px took dot 541 MB for its PNG (issue 28).
    A 300-node chain is ~300 in tall at 96 dpi: scaled into RASTER_MAX_IN (64 in, 6,144 px), the
    vector SVG untouched."""
    from PIL import Image

    from archkit.generators.renderers import RASTER_MAX_IN, run_dot

    src = "digraph g {\n" + "".join(f"  n{i} -> n{i + 1};\n" for i in range(300)) + "}\n"
    w, h = Image.open(io.BytesIO(run_dot(src, "png"))).size
    assert max(w, h) <= RASTER_MAX_IN * 96 and h > 5000, (w, h)
    svg = run_dot(src, "svg").decode()
    assert 'height="' in svg and int(svg.split('height="')[1].split("pt")[0]) > 64 * 72
