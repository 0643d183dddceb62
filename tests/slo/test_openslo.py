"""OpenSLO v1 export and import: documents written from the OpenSLO specification, and round trips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from archkit.openslo import OpenSloError, export_documents, import_documents, parse_selector, spec_fragment
from archkit.plans.context import prepare
from archkit.plans.slo import slo_plan
from archkit.spec import load_text
from archkit.spec.model import Spec

DEMO = Path(__file__).parent / "data" / "slo-demo.yaml"
EXAMPLES = sorted(Path("examples").glob("*.yaml")) + [DEMO]

# Written from the OpenSLO v1 specification (github.com/OpenSLO/OpenSLO, README "SLI", "SLO",
# "AlertPolicy"): an SLI referenced by name, an SLO with an inline indicator and targetPercent,
# a four-week window, and a burn-rate AlertPolicy with a window pair archkit does not use.
HANDWRITTEN = """\
apiVersion: openslo/v1
kind: SLI
metadata:
  name: checkout-errors
spec:
  ratioMetric:
    counter: true
    bad:
      metricSource:
        type: Prometheus
        spec:
          query: sum(rate(http_requests_total{job="checkout", code=~"5.."}[5m]))
    total:
      metricSource:
        type: Prometheus
        spec:
          query: sum(rate(http_requests_total{job="checkout"}[5m]))
---
apiVersion: openslo/v1
kind: SLO
metadata:
  name: checkout-availability
  displayName: checkout-availability
spec:
  service: checkout
  indicatorRef: checkout-errors
  timeWindow:
    - duration: 28d
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - displayName: good
      target: 0.995
---
apiVersion: openslo/v1
kind: SLO
metadata:
  name: checkout-latency
spec:
  service: checkout
  indicator:
    metadata:
      name: checkout-fast
    spec:
      ratioMetric:
        counter: true
        good:
          metricSource:
            type: Prometheus
            spec:
              query: http_request_duration_seconds_bucket{job="checkout", le="0.5"}
        total:
          metricSource:
            type: Prometheus
            spec:
              query: http_request_duration_seconds_bucket{job="checkout", le="+Inf"}
  timeWindow:
    - duration: 4w
      isRolling: true
  budgetingMethod: Occurrences
  objectives:
    - displayName: fast
      targetPercent: 99
---
apiVersion: openslo/v1
kind: AlertPolicy
metadata:
  name: checkout-page
spec:
  alertWhenBreaching: true
  conditions:
    - kind: AlertCondition
      metadata:
        name: checkout-burn
      spec:
        severity: page
        condition: {kind: burnrate, op: gte, threshold: 10, lookbackWindow: 2h, alertAfter: 10m}
"""


def _with_slos(spec: Spec, entries: list[dict]) -> Spec:
    doc = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["slos"] = entries
    res = load_text(yaml.safe_dump(doc), "roundtrip.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def _signature(spec: Spec) -> list[tuple]:
    return [
        (s.name, s.kind, s.objective, s.window, s.stage, s.threshold_ms, s.error_ratio("5m"))
        for s in slo_plan(spec).slos
    ]


def test_handwritten_documents_import_into_slos() -> None:
    entries, notes = import_documents(HANDWRITTEN, "checkout.yaml")
    assert [e["name"] for e in entries] == ["good", "fast"]
    avail, fast = entries
    assert avail["objective"] == 0.995 and avail["window"] == "28d"
    assert avail["bad"] == {
        "metric": "http_requests_total",
        "matchers": [
            {"label": "job", "op": "=", "value": "checkout"},
            {"label": "code", "op": "=~", "value": "5.."},
        ],
    }
    assert fast["objective"] == pytest.approx(0.99) and fast["window"] == "28d"
    assert fast["kind"] == "availability"  # no archkit annotation: a good/total event ratio
    assert notes and "checkout-page" in notes[0]
    spec = _with_slos(prepare(DEMO).spec, entries)
    plan = slo_plan(spec)
    assert 'code=~"5.."' in plan.slos[0].error_ratio("1h") and "[28d]" not in plan.slos[0].error_ratio("1h")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_export_then_import_round_trips(path: Path) -> None:
    spec = prepare(path).spec
    docs = export_documents(spec)
    kinds = [d["kind"] for d in docs]
    assert kinds[0] == "Service" and kinds.count("SLO") == len(slo_plan(spec).slos)
    assert all(d["apiVersion"] == "openslo/v1" for d in docs)
    entries, notes = import_documents(yaml.safe_dump_all(docs), "export.yaml")
    assert notes == []  # the exported policies are archkit's own tiers
    back = _with_slos(spec, entries)
    assert _signature(back) == _signature(spec)
    # and once more: export of the imported spec is the same documents
    assert export_documents(back)[1:] == docs[1:]


@pytest.mark.parametrize(
    "text, where",
    [
        ("apiVersion: openslo/v2\nkind: SLO\n", "apiVersion is not openslo/v1"),
        (
            "apiVersion: openslo/v1\nkind: SLO\nmetadata: {name: x}\nspec: {indicatorRef: nope}\n",
            "names no SLI",
        ),
        ("a: [1,\n", "checkout.yaml:"),
    ],
)
def test_bad_documents_are_one_located_line(text: str, where: str) -> None:
    with pytest.raises(OpenSloError) as err:
        import_documents(text, "checkout.yaml")
    assert where in str(err.value) and "\n" not in str(err.value)


def test_selectors_parse_with_every_matcher_and_escapes() -> None:
    assert parse_selector('x{a="1", b!="2", c=~"3|4", d!~"5.*", e="q\\"uote"}') == (
        "x",
        [
            {"label": "a", "op": "=", "value": "1"},
            {"label": "b", "op": "!=", "value": "2"},
            {"label": "c", "op": "=~", "value": "3|4"},
            {"label": "d", "op": "!~", "value": "5.*"},
            {"label": "e", "op": "=", "value": 'q"uote'},
        ],
    )
    assert parse_selector('{__name__="odd.name"}') == ("odd.name", [])
    with pytest.raises(ValueError):
        parse_selector("rate(x[5m]) / 2")


def test_cli_import_writes_a_new_file_and_never_overwrites(tmp_path: Path) -> None:
    src = tmp_path / "checkout.openslo.yaml"
    src.write_text(HANDWRITTEN, encoding="utf-8")
    out = tmp_path / "slos.yaml"
    cmd = [sys.executable, "-m", "archkit", "slo", "import", str(src), "-o", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0, first.stderr
    assert yaml.safe_load(out.read_text(encoding="utf-8")) == yaml.safe_load(
        spec_fragment(import_documents(HANDWRITTEN)[0])
    )
    out.write_text("mine\n", encoding="utf-8")
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 2 and "not overwriting" in again.stderr
    assert out.read_text(encoding="utf-8") == "mine\n"


def test_a_latency_slo_with_its_own_events_keeps_them() -> None:
    spec = prepare(DEMO).spec
    own = {
        "name": "own",
        "kind": "latency",
        "objective": 0.9,
        "threshold_ms": 500,
        "good": {"metric": "rpc_seconds_bucket", "matchers": [{"label": "le", "op": "=", "value": "0.5"}]},
        "total": {"metric": "rpc_seconds_bucket", "matchers": [{"label": "le", "op": "=", "value": "+Inf"}]},
    }
    spec = _with_slos(spec, [own])
    entries, _ = import_documents(yaml.safe_dump_all(export_documents(spec)))
    assert entries[0]["good"]["metric"] == "rpc_seconds_bucket"
    assert _signature(_with_slos(spec, entries)) == _signature(spec)
