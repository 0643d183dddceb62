"""Load-test reports are read tolerantly and over-budget stages are marked on the data-flow diagram."""

from __future__ import annotations

from tests.conftest import EXAMPLES
from tests.generators.diagram_helpers import context, load

from archkit.generators import all_generators
from archkit.generators.measured import read_measured

SPEC = next(p for p in EXAMPLES if p.stem == "recommendation")


def test_reads_the_loadtest_measured_json_shape():
    m = read_measured(
        {
            "apiVersion": "archkit/v1",
            "kind": "measured",
            "spec": "recommendation",
            "level": "baseline",
            "level_kind": "baseline",
            "env": None,
            "passed": False,
            "end_to_end": {"p50_ms": 50, "p99_ms": 900.5, "throughput_rps": 990, "requests": 10},
            "stages": {"rank": {"p50_ms": 20, "p95_ms": 70, "p99_ms": 140, "count": 5}},
        }
    )
    assert m is not None
    assert m.stage("rank") == {"p50_ms": 20.0, "p95_ms": 70.0, "p99_ms": 140.0}
    assert m.end_to_end == {"p50_ms": 50.0, "p99_ms": 900.5, "throughput_rps": 990.0}
    assert m.about == {
        "spec": "recommendation",
        "level": "baseline",
        "level_kind": "baseline",
        "passed": "false",
    }


def test_reads_variants_lists_seconds_and_levels():
    m = read_measured(
        {
            "levels": [
                {"id": "a"},
                {
                    "stages": [{"stage": "rank", "p99_s": 0.2}],
                    "overall": {"latency_ms": {"p50": 12}, "rps": 3},
                },
            ]
        }
    )
    assert m is not None and m.stage("rank") == {"p99_ms": 200.0}
    assert m.end_to_end == {"p50_ms": 12.0, "throughput_rps": 3.0}
    assert read_measured({"nothing": True}) is None and read_measured([1, 2]) is None
    assert read_measured({"stages": {"x": {"p99_ms": "fast"}}}) is None  # non-numbers are ignored


def test_over_budget_stage_is_filled_red_with_its_measurement():
    spec = load(SPEC)
    plain = all_generators()["dataflow"].fn(context(spec))["dataflow.dot"]
    ctx = context(
        spec, measured={"stages": {"rank": {"p50_ms": 30, "p99_ms": 140}, "gateway": {"p99_ms": 4}}}
    )
    marked = all_generators()["dataflow"].fn(ctx)["dataflow.dot"]
    assert "#fecaca" not in plain.split("legend")[0]
    rank_line = next(line for line in marked.splitlines() if "Ranking model" in line)
    assert 'fillcolor="#fecaca"' in rank_line and "⚠ measured" in rank_line and "P99 140 ms" in rank_line
    gw_line = next(line for line in marked.splitlines() if "Traffic gateway" in line)
    assert "#fecaca" not in gw_line and "measured" in gw_line  # 4 ms is within its 10 ms budget


def test_predicted_vs_measured_rows_are_read_and_bounded():
    data = {
        "end_to_end": {"p50_ms": 153},
        "predicted": {
            "end_to_end": {"p50_ms": {"predicted": 149.4, "measured": 153.0, "error_pct": -2.3}},
            "stages": {"detect": {"mean_ms": {"predicted": 48.3, "measured": 40.9, "error_pct": 18.0}}},
            "knee_rps": {"predicted": 10.6, "measured": 9.93, "error_pct": 6.8},
            "junk": {"p50_ms": {"predicted": "x"}},
        },
    }
    m = read_measured(data)
    assert m is not None
    assert m.fidelity == [
        ("end to end", "p50_ms", 149.4, 153.0, -2.3),
        ("stage detect", "mean_ms", 48.3, 40.9, 18.0),
        ("stress", "knee_rps", 10.6, 9.93, 6.8),
    ]
    bad = read_measured(
        {"end_to_end": {"p50_ms": 1}, "predicted": {"end_to_end": {"p50_ms": {"predicted": 1e400}}}}
    )
    assert bad is not None and bad.fidelity == []


def test_review_page_shows_predicted_vs_measured_escaped():
    spec = load(SPEC)
    ctx = context(
        spec,
        measured={
            "end_to_end": {"p50_ms": 153},
            "predicted": {
                "end_to_end": {"p50_ms": {"predicted": 149.4, "measured": 153.0, "error_pct": -2.3}},
                "stages": {
                    "<script>x</script>": {"p99_ms": {"predicted": 30, "measured": 10, "error_pct": 200}}
                },
            },
        },
    )
    html = all_generators()["review"].fn(ctx)["review.html"]
    assert "Predicted vs measured" in html
    assert (
        '<td>p50_ms</td><td class="num">149.4</td><td class="num">153</td><td class="num ok">-2.3 %</td>'
        in html
    )
    assert "<script>x</script>" not in html and "+200.0 %" in html
