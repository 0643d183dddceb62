"""Prometheus rules and their promtool unit tests, checked by the real promtool (/usr/bin/promtool)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import EXAMPLES, REFERENCE_SPECS

from archkit import api
from archkit.generators.gen_prometheus import rules_document, unit_tests_document
from archkit.generators.registry import RenderContext
from archkit.plans.alerts import burn_factor, plan
from archkit.spec.model import MetricType, Spec

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SPECS = EXAMPLES + [p for p in REFERENCE_SPECS if p.name == "ocr-reference.yaml"]
needs_promtool = pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool not installed (make setup)")


def _spec(path: Path) -> Spec:
    res = api.load(path)
    assert res.spec is not None, res.diagnostics
    return res.spec


def _files(spec: Spec, name: str = "spec.yaml") -> dict[str, str]:
    files, _ = api.generate(spec, name, only=["prometheus"])
    return files


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return folder / "prometheus"


def _promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, cwd=cwd, timeout=300, check=False
    )


# ---------------------------------------------------------------- promtool accepts and passes


@needs_promtool
def test_promtool_checks_and_passes_every_example(tmp_path):
    dirs = [_write(tmp_path / p.stem, _files(_spec(p), p.name)) for p in SPECS]
    check = _promtool("check", "rules", *[str(d / "rules.yaml") for d in dirs])
    assert check.returncode == 0, check.stdout + check.stderr
    test = _promtool("test", "rules", *[str(d / "rules.test.yaml") for d in dirs])
    assert test.returncode == 0, (test.stdout + test.stderr)[-4000:]
    assert test.stdout.count("SUCCESS") == len(dirs)


def _tighten(spec: Spec, factor: float = 4.0) -> Spec:
    """The same service with every budget `factor` times stricter."""
    t = spec.model_copy(deep=True)
    for st_ in t.dataflow.stages:
        if st_.p99_ms is not None:
            st_.p99_ms /= factor
        if st_.failure_rate is not None:
            st_.failure_rate /= factor
        if st_.model and st_.model.batching and st_.model.batching.max_queue_delay_us:
            st_.model.batching.max_queue_delay_us = int(st_.model.batching.max_queue_delay_us / factor)
    if t.budgets.availability is not None:
        t.budgets.availability = 1 - (1 - t.budgets.availability) / factor
    gs = t.observability.golden_signals
    if gs.cold_start:
        gs.cold_start.max_ms /= factor
    if gs.gpu_memory:
        gs.gpu_memory.max_ratio /= factor
    if gs.effective_qps and gs.effective_qps.baseline_qps:
        gs.effective_qps.baseline_qps *= factor
    if gs.drift:
        gs.drift.p_value_threshold = min(1.0, gs.drift.p_value_threshold * factor)
    return t


@needs_promtool
def test_tightened_budget_makes_generated_tests_fail(tmp_path):
    """Tests generated from a spec fail against rules generated from a stricter spec: they can fail."""
    spec = _spec(Path("examples/industrial-inspection.yaml").resolve())
    folder = tmp_path / "prometheus"
    folder.mkdir()
    (folder / "rules.yaml").write_text(yaml.safe_dump(rules_document(_tighten(spec))), encoding="utf-8")
    (folder / "rules.test.yaml").write_text(yaml.safe_dump(unit_tests_document(spec)), encoding="utf-8")
    res = _promtool("test", "rules", "rules.test.yaml", cwd=folder)
    assert res.returncode == 1, res.stdout
    out = res.stdout + res.stderr
    # the series that must stay quiet under the original budgets now fire the stricter alerts
    for alert in (
        "DetectLatencyAboveBudget",
        "PreprocessFailureRateAboveBudget",
        "AvailabilityErrorBudgetBurnFast",
        "ColdStartSlow",
        "GpuMemoryHigh",
    ):
        assert f"alertname: {alert}" in out, alert
    # (test_promtool_checks_and_passes_every_example shows the untouched rules pass these tests)


# ---------------------------------------------------------------- the rules themselves


def test_burn_factors_follow_the_sre_workbook_and_scale_with_the_window():
    assert burn_factor(0.02, 1, 30) == pytest.approx(14.4)
    assert burn_factor(0.05, 6, 30) == pytest.approx(6)
    assert burn_factor(0.10, 72, 30) == pytest.approx(1)
    assert burn_factor(0.02, 1, 28) == pytest.approx(13.44)
    assert burn_factor(0.10, 72, 7) == pytest.approx(7 / 30)


def test_burn_rate_thresholds_in_expressions():
    alerts, _ = plan(_spec(Path("examples/voice-customer-service.yaml").resolve()))  # 28 days, 99.5 %
    by = {a.name: a for a in alerts}
    assert by["AvailabilityErrorBudgetBurnFast"].expr.count("> 0.0672") == 2  # 13.44 × 0.005
    assert by["AvailabilityErrorBudgetBurnMedium"].expr.count("> 0.028") == 2  # 5.6 × 0.005
    steady = by["AvailabilityErrorBudgetBurnSteady"].expr  # reads the 3d and 6h SLI recordings
    assert "ratio_rate3d{" in steady and "ratio_rate6h{" in steady
    assert (
        by["AvailabilityErrorBudgetBurnSteady"].severity == "ticket"
        and by["AvailabilityErrorBudgetBurnFast"].severity == "page"
    )


def test_latency_alerts_follow_the_bound_metric_type():
    alerts, _ = plan(_spec(Path("examples/industrial-inspection.yaml").resolve()))
    by = {a.name: a for a in alerts}
    # Triton cumulative counters: a rate ratio of duration over count, in microseconds
    assert by["DetectLatencyAboveBudget"].expr == (
        '((sum(rate(nv_inference_request_duration_us{model="yolov8-defect"}[5m])) / '
        'sum(rate(nv_inference_request_success{model="yolov8-defect"}[5m]))) * 1e-06) > 0.05'
    )
    # a histogram: histogram_quantile over _bucket
    assert by["PreprocessLatencyAboveBudget"].expr == (
        "histogram_quantile(0.99, sum by (le) (rate(preprocess_latency_seconds_bucket[5m]))) > 0.005"
    )
    # Triton's success counter excludes failures: the denominator adds them back
    assert "(sum(rate(nv_inference_request_success" in by["DetectFailureRateAboveBudget"].expr
    assert "+ sum(rate(nv_inference_request_failure" in by["DetectFailureRateAboveBudget"].expr


def test_summary_and_envoy_bucket_metrics():
    spec = _spec(Path("examples/recommendation.yaml").resolve())
    alerts, _ = plan(spec)
    gw = next(a for a in alerts if a.stage == "gateway")
    # the spec names the _bucket series itself and Envoy's rq_time is in milliseconds
    assert "rate(envoy_cluster_upstream_rq_time_bucket[5m])" in gw.expr and "* 0.001" in gw.expr
    t = spec.model_copy(deep=True)
    sm = t.observability.stages[1]
    sm.latency.type = MetricType.summary
    alerts, _ = plan(t)
    feat = next(a for a in alerts if a.stage == sm.stage and "Latency" in a.name)
    assert 'quantile="0.99"' in feat.expr and feat.expr.startswith("max(feature_service_latency_seconds{")


METRIC_TOKEN = re.compile(r'([A-Za-z_:][A-Za-z0-9_:]*)\s*[{\[]|__name__="((?:[^"\\]|\\.)*)"')


def _declared(spec: Spec) -> set[str]:
    names: set[str] = set()
    for sm in spec.observability.stages:
        for ref in (sm.latency, sm.errors, sm.requests, sm.queue, sm.compute):
            if ref is not None:
                names |= {ref.metric, ref.metric + "_bucket", ref.metric + "_count"}
                if ref.count_metric:
                    names.add(ref.count_metric)
    gs = spec.observability.golden_signals
    for sig in (gs.effective_qps, gs.cold_start, gs.drift, gs.gpu_memory, gs.memory_growth):
        if sig is not None:
            names |= {sig.metric, sig.metric + "_bucket"}
    if gs.gpu_memory and gs.gpu_memory.total_metric:
        names.add(gs.gpu_memory.total_metric)
    # a connection pool's in-use gauge and a workflow's exhausted-retries counter (seed 004 §1, §2.2)
    names |= {cp.in_use.metric for cp in spec.connection_pools if cp.in_use is not None}
    names |= {wf.retries_exhausted.metric for wf in spec.workflows if wf.retries_exhausted is not None}
    # a degrade rule's structured condition may name its histogram directly (seed 004 §3.2)
    names |= {r.when.metric + "_bucket" for r in spec.policies.degrade if r.when and r.when.metric}
    # an LLM stage's engine declares its series through the engine adapter (archkit.engines)
    from archkit.engines import adapter

    for stage in spec.dataflow.stages:
        if stage.llm is not None:
            eng = adapter(stage.llm.engine.name.value)
            for measure in eng.measures:
                names |= {n + sfx for n in eng.all_names(measure) for sfx in ("", "_bucket")}
    return names


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_alert_expressions_use_only_declared_series(path):
    spec = _spec(path)
    declared = _declared(spec)
    doc = rules_document(spec)
    exprs = [r["expr"] for g in doc["groups"] for r in g["rules"]]
    assert exprs
    used = {m.group(1) or m.group(2) for e in exprs for m in METRIC_TOKEN.finditer(e)}
    used -= {
        r["record"] for g in doc["groups"] for r in g["rules"] if "record" in r
    }  # SLO alerts read recordings
    assert used and used <= declared, used - declared


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_alert_has_severity_summary_and_runbook_url(path):
    doc = rules_document(_spec(path))
    alerts = [r for g in doc["groups"] for r in g["rules"] if "alert" in r]
    assert alerts
    for r in alerts:
        assert r["labels"]["severity"] in {"page", "ticket"}
        assert r["annotations"]["summary"] and r["annotations"]["runbook_url"].startswith(
            "runbooks/alerts.md#"
        )
    names = [r["alert"] for r in alerts]
    assert len(names) == len(set(names))


def test_generated_files_are_byte_stable_and_carry_the_header():
    spec = _spec(Path("examples/loan-preapproval.yaml").resolve())
    a, b = _files(spec, "loan.yaml"), _files(spec, "loan.yaml")
    assert a == b
    for text in a.values():
        assert text.startswith("# Generated by archkit from loan.yaml")
        yaml.safe_load(text)


# ---------------------------------------------------------------- any string stays inert

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
_label_key = st.text(min_size=1, max_size=10)


def _random_spec(draw_name, metric, labels, title, stage_name, owner) -> Spec:
    return Spec.model_validate(
        {
            "apiVersion": "archkit/v1",
            "metadata": {
                "name": draw_name,
                "title": title,
                "owners": [owner],
                "links": {"runbook_base_url": "https://runbooks.example/" + title},
            },
            "budgets": {"availability": 0.999, "slo_window_days": 30},
            "dataflow": {
                "stages": [
                    {
                        "id": "s1",
                        "name": stage_name,
                        "kind": "model",
                        "p99_ms": 50,
                        "failure_rate": 0.01,
                        "service": "svc",
                        "model": {
                            "name": title,
                            "batching": {"max_batch_size": 4, "max_queue_delay_us": 1000},
                        },
                    }
                ]
            },
            "topology": {"node_pools": [{"id": "p"}], "services": [{"id": "svc", "pool": "p"}]},
            "faulttrees": [
                {
                    "id": "t",
                    "service": "svc",
                    "top": "g",
                    "label": title,
                    "gates": [{"id": "g", "type": "or", "inputs": ["e"]}],
                    "events": [
                        {
                            "id": "e",
                            "label": stage_name,
                            "check": title,
                            "expect": owner,
                            "probability": 0.1,
                            "remedy": title,
                        }
                    ],
                }
            ],
            "observability": {
                "stages": [
                    {
                        "stage": "s1",
                        "latency": {"metric": metric, "type": "histogram", "labels": labels},
                        "queue": {
                            "metric": metric + "_q",
                            "type": "counter_us",
                            "count_metric": metric + "_n",
                            "labels": labels,
                        },
                        "errors": {"metric": metric + "_e", "type": "counter", "labels": labels},
                        "requests": {"metric": metric + "_r", "type": "counter", "labels": labels},
                    }
                ],
                "golden_signals": {
                    "effective_qps": {"metric": metric + "_eff", "baseline_qps": 10, "labels": labels},
                    "cold_start": {"metric": metric + "_cold", "labels": labels},
                    "gpu_memory": {
                        "metric": metric + "_used",
                        "total_metric": metric + "_total",
                        "labels": labels,
                    },
                    "drift": {"metric": metric + "_drift", "labels": labels},
                },
            },
        }
    )


@needs_promtool
@pytest.mark.slow
@settings(
    max_examples=2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(_text, st.dictionaries(_label_key, _text, max_size=3), _text, _text, _text),
        min_size=3,
        max_size=3,
    )
)
def test_any_string_yields_valid_yaml_and_promql(tmp_path_factory, batch):
    """Random metric names, label keys and values, titles: promtool accepts the rules and passes the tests."""
    root = tmp_path_factory.mktemp("hyp")
    dirs = []
    for i, (metric, labels, title, stage_name, owner) in enumerate(batch):
        spec = _random_spec("svc-name", metric, labels, title, stage_name, owner)
        files, _ = api.generate(spec, "spec.yaml", only=["prometheus", "runbooks"])
        for text in files.values():
            assert isinstance(text, str)
        rules = yaml.safe_load(files["prometheus/rules.yaml"])
        assert any(r.get("alert") for g in rules["groups"] for r in g["rules"])
        dirs.append(_write(root / str(i), files))
    check = _promtool("check", "rules", *[str(d / "rules.yaml") for d in dirs])
    assert check.returncode == 0, check.stdout + check.stderr
    test = _promtool("test", "rules", *[str(d / "rules.test.yaml") for d in dirs])
    assert test.returncode == 0, (test.stdout + test.stderr)[-3000:]


def test_render_context_generates_through_the_registry():
    from archkit.generators import all_generators

    gens = all_generators()
    assert "prometheus" in gens and "runbooks" in gens
    spec = _spec(Path("examples/recommendation.yaml").resolve())
    files = gens["prometheus"].fn(RenderContext(spec=spec, spec_path="recommendation.yaml"))
    assert set(files) == {"prometheus/rules.yaml", "prometheus/rules.test.yaml"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_alert_has_a_firing_and_a_quiet_unit_test(path):
    spec = _spec(path)
    alerts = [r["alert"] for g in rules_document(spec)["groups"] for r in g["rules"] if "alert" in r]
    tests = unit_tests_document(spec)["tests"]
    firing = {t["alert_rule_test"][0]["alertname"] for t in tests if t["alert_rule_test"][0]["exp_alerts"]}
    quiet = {t["alert_rule_test"][0]["alertname"] for t in tests if not t["alert_rule_test"][0]["exp_alerts"]}
    assert set(alerts) == firing == quiet


def test_selectors_escape_values_and_quote_odd_metric_names():
    from archkit.plans.alerts import Series

    assert str(Series.of("up", {})) == "up"
    assert str(Series.of("up", {"job": 'a"b\\c\nd'})) == 'up{job="a\\"b\\\\c\\nd"}'
    # not a PromQL identifier: selected by __name__; label names are sanitised, reserved ones dropped
    assert str(Series.of("my metric", {"1-x": "v", "__name__": "evil"})) == '{__name__="my metric", _1_x="v"}'
