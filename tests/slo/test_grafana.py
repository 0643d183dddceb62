"""The Grafana dashboard of every example, read back with grafana-foundation-sdk's own model types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import Dashboard, Panel, RowPanel

from archkit import api
from archkit.generators.gen_grafana import panel_ids, panel_url
from archkit.plans.context import prepare

SPECS = sorted(Path("examples").glob("*.yaml")) + [Path("specs/ocr-reference.yaml")]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_example_renders_a_dashboard_the_library_types_accept(path: Path) -> None:
    spec = prepare(path).spec
    files, _ = api.generate(spec, str(path), only=["grafana"])
    doc = json.loads(files["grafana/dashboard.json"])
    board = Dashboard.from_json(doc)
    # the typed model re-encodes to the same document: nothing was dropped as unknown
    assert json.loads(json.dumps(board, cls=JSONEncoder, sort_keys=True)) == doc
    rows = [p for p in board.panels or [] if isinstance(p, RowPanel)]
    panels = [p for p in board.panels or [] if isinstance(p, Panel)]
    stage_rows = [r.title for r in rows if r.title.startswith("Stage ")]
    assert stage_rows == [f"Stage {st.name or st.id}" for st in spec.dataflow.stages]  # data-flow order
    ids = [p.id_val for p in panels] + [r.id_val for r in rows]
    assert len(ids) == len(set(ids))
    for p in panels:
        assert p.targets, p.title
        assert p.datasource is not None and p.datasource.type_val == "prometheus"


def test_dashboard_shows_slo_burn_budget_qps_and_queue_vs_compute() -> None:
    spec = prepare("examples/industrial-inspection.yaml").spec
    doc = json.loads(api.generate(spec, "x.yaml", only=["grafana"])[0]["grafana/dashboard.json"])
    titles = [p["title"] for p in doc["panels"]]
    assert "availability: burn rate" in titles and "availability: error budget remaining" in titles
    assert "Effective QPS" in titles
    assert any(t.endswith("Triton queue vs compute") for t in titles)
    burn = next(p for p in doc["panels"] if p["title"] == "availability: burn rate")
    steps = [s["value"] for s in burn["fieldConfig"]["defaults"]["thresholds"]["steps"]]
    assert steps[1:] == pytest.approx([1, 3, 6, 14.4])  # the four burn tiers of a 30-day SLO


def test_panel_urls_need_links_dashboard() -> None:
    spec = prepare("examples/industrial-inspection.yaml").spec
    assert panel_url(spec, "stage:detect") is None or spec.metadata.links.get("dashboard")
    spec.metadata.links["dashboard"] = "https://grafana.example/d/archkit-x"
    pid = panel_ids(spec)["stage:detect"]
    assert panel_url(spec, "stage:detect") == f"https://grafana.example/d/archkit-x?viewPanel={pid}"
    assert panel_url(spec, "stage:nope") is None


def test_runbooks_link_alerts_to_their_panels() -> None:
    spec = prepare("examples/industrial-inspection.yaml").spec
    spec.metadata.links["dashboard"] = "https://grafana.example/d/archkit x"
    alerts_md = api.generate(spec, "x.yaml", only=["runbooks"])[0]["runbooks/alerts.md"]
    ids = panel_ids(spec)
    assert (
        f"[dashboard panel](https://grafana.example/d/archkit%20x?viewPanel={ids['stage:detect']})"
        in alerts_md
    )
    assert f"viewPanel={ids['slo:availability']})" in alerts_md  # the burn alerts point at their SLO
    spec.metadata.links.pop("dashboard")
    assert "dashboard panel" not in api.generate(spec, "x.yaml", only=["runbooks"])[0]["runbooks/alerts.md"]
