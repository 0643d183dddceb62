"""The review page draws the predicted latency-vs-load curve with the measured steps (issue 29),
as the load-test report does: the curve a load-test result recorded and its phases, golden and
byte-identical (Graphviz and PlantUML render the page's diagrams for real)."""

from __future__ import annotations

import copy
import re

from tests.conftest import EXAMPLES, ROOT

from archkit import api
from archkit.generators.gen_review import load_curve

SPEC = next(p for p in EXAMPLES if p.stem == "recommendation")
GOLDEN = ROOT / "tests" / "generators" / "review_curve" / "load-curve.html"


def _point(rate: float, p50: float, p99: float, shed: float) -> dict:
    return {
        "rate_rps": rate, "throughput_rps": rate * (1 - shed), "p50_ms": p50, "p95_ms": p99 * 0.8,
        "p99_ms": p99, "mean_ms": p50 * 1.1, "shed_share": shed, "failed_share": 0.0,
        "degraded_share": 0.0, "stable": True, "requests": 5000,
    }  # fmt: skip


# A result.json as `archkit loadtest` writes it (the run under `measured`), cut to what the plot
# reads: the predicted curve (three rates, the knee at 12 req/s, a 2.5 s P99 budget) and two steps.
RESULT = {
    "kind": "loadtest-result",
    "measured": {
        "phases": [
            {"offered_rps": 4.0, "requests": 240, "p50_ms": 105.0, "p99_ms": 190.0},
            {"offered_rps": 12.0, "requests": 720, "p50_ms": 410.0, "p99_ms": 1300.0},
            {"offered_rps": 16.0, "requests": 0},  # no request answered: nothing to draw
        ],
        "stages": {"rank": {"p50_ms": 30, "p99_ms": 140}},
        "end_to_end": {"p50_ms": 105, "p99_ms": 190},
        "predicted": {
            "curve": {
                "name": "recommendation",
                "environment": None,
                "p99_budget_ms": 2500.0,
                "ceiling_rps": 13.0,
                "bottleneck": "resource machine:cpu",
                "knee_rps": 12.0,
                "knee_reason": "5.1 % of the requests refused or failed",
                "method": "hand-made",
                "points": [
                    _point(4.0, 100.0, 180.0, 0.0),
                    _point(8.0, 150.0, 320.0, 0.0),
                    _point(12.0, 380.0, 1200.0, 0.06),
                ],
            }
        },
    },
}


def test_the_curve_and_the_measured_steps_are_drawn_byte_for_byte(golden) -> None:
    markup = str(load_curve(RESULT))
    assert markup == str(load_curve(copy.deepcopy(RESULT)))  # deterministic
    # two answered steps: two P99 circles and two P50 squares; the empty third step is not drawn
    assert markup.count("<circle") == 2 and markup.count("<rect x=") == 2
    assert 'aria-label="latency vs load"' in markup and "<script" not in markup
    golden.check(GOLDEN, markup + "\n")


def test_a_measured_json_draws_its_curve_and_no_curve_draws_nothing() -> None:
    run = RESULT["measured"]
    assert str(load_curve(run)) == str(load_curve(RESULT))  # the run itself (measured.json) reads the same
    assert load_curve({"measured": {"stages": {}}}) is None and load_curve([1, 2]) is None
    broken = copy.deepcopy(RESULT)
    broken["measured"]["predicted"]["curve"]["points"] = [{"rate_rps": "x"}]
    assert load_curve(broken) is None  # not what a load test writes: no plot, no traceback


def test_the_review_page_shows_it_under_predicted_vs_measured(tmp_path) -> None:
    pages = []
    for name in ("a", "b"):
        res = api.render(SPEC, tmp_path / name, only=["review"], measured=RESULT)
        assert res.write.ok
        pages.append((tmp_path / name / "review.html").read_text(encoding="utf-8"))
    assert pages[0] == pages[1]
    section = re.search(r'<h3 id="load-curve">.*?</figure>', pages[0], re.DOTALL)
    assert section is not None and GOLDEN.read_text(encoding="utf-8").strip() in section.group(0)
    plain = api.render(
        SPEC, tmp_path / "plain", only=["review"], measured={"stages": RESULT["measured"]["stages"]}
    )
    assert plain.write.ok
    assert 'id="load-curve"' not in (tmp_path / "plain" / "review.html").read_text(encoding="utf-8")
