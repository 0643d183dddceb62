"""No rule crashes (AK199) on any fixture spec, any example, or odd but valid numbers."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from archkit.api import capacity
from archkit.checks import run_rules
from archkit.spec import load_text
from tests.conftest import EXAMPLES

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("AK*.yaml"))


def test_every_rule_runs_on_every_fixture_and_example():
    texts = [c["spec"] for p in FIXTURES for c in yaml.safe_load(p.read_text(encoding="utf-8"))["cases"]]
    texts += [p.read_text(encoding="utf-8") for p in EXAMPLES]
    for text in texts:
        res = load_text(text, "x.yaml")
        spec = res.spec or res.partial
        if spec is None:
            continue
        crashed = [d.text() for d in run_rules(spec) if d.code == "AK199"]
        assert not crashed, crashed


SPEC = """
apiVersion: archkit/v1
metadata: {{name: t}}
budgets: {{p50_ms: {p50}, p99_ms: {p99}, throughput_rps: {rate}, peak_throughput_rps: {peak}}}
dataflow:
  stages:
    - id: m
      kind: model
      service: s
      p99_ms: {sp99}
      model:
        name: m
        instances: {inst}
        reload_ms: {reload}
        batching: {{max_batch_size: {maxb}, preferred_batch_sizes: [{pref}], max_queue_delay_us: {delay}}}
        service_time: [{{batch_size: 1, compute_ms: {c1}}}, {{batch_size: {b2}, compute_ms: {c2}}}]
topology:
  node_pools: [{{id: p}}]
  services: [{{id: s, pool: p, replicas: {reps}}}]
controlflow:
  start: c
  timeout_ms: {deadline}
  calls:
    - {{id: c, target: m, timeout_ms: {timeout}, retry: {{attempts: {att}, backoff_ms: 0}}, next: ok, on_failure: ok}}
  terminals: [{{id: ok}}]
"""

ms = st.floats(0, 5000, allow_nan=False).map(lambda x: round(x, 2))


@settings(max_examples=12, deadline=None)
@given(
    p50=ms,
    p99=ms,
    sp99=ms,
    rate=ms,
    peak=ms,
    inst=st.integers(1, 8),
    reload=ms,
    maxb=st.integers(1, 64),
    pref=st.integers(1, 64),
    delay=st.integers(0, 1_000_000),
    c1=ms,
    b2=st.integers(1, 64),
    c2=ms,
    reps=st.integers(0, 20),
    deadline=ms,
    timeout=ms,
    att=st.integers(0, 10),
)
def test_odd_numbers_never_crash_a_rule_or_the_capacity_report(tmp_path_factory, **kw):
    text = SPEC.format(**kw)
    res = load_text(text, "x.yaml")
    assert res.ok, [d.text() for d in res.diagnostics]
    assert not [d.text() for d in run_rules(res.spec) if d.code == "AK199"]
    path = tmp_path_factory.mktemp("c") / "s.yaml"
    path.write_text(text, encoding="utf-8")
    rep = capacity(path)
    assert not rep.diagnostics


def test_ak203_searches_once_for_eleven_copies_of_one_stage():
    """`make fuzz` found this: a structural mutation copying the 'asr' model stage 11 times
    (12 model stages in all) took 4–5 s in AK203 (the recommendation search, ~0.3 s, ran once
    per copy; a 164-copy variant took 70 s). Equal service tables now share one memoised
    search and one simulation."""
    from archkit import api
    from archkit.perf import batching, simulate

    batching._recommend.cache_clear()
    simulate.simulate.cache_clear()
    path = Path(__file__).parent / "regressions" / "ak203-12-copies-of-one-model-stage.yaml"
    report = api.check([path], select=["AK203"])
    ak203 = [d for d in report.diagnostics if d.code == "AK203"]
    assert len(ak203) == 11 and len({d.hint for d in ak203}) == 1
    searches = batching._recommend.cache_info()
    assert (searches.misses, searches.hits) == (1, 10), searches


def test_ak705_with_a_zero_user_ttft_budget_reports_instead_of_crashing() -> None:
    """The schema-valid fuzz run of issue 28: `user_ttft_p99_ms: 0` (schema-valid) divided by
    zero in AK705's message (an AK199 rule crash); now it is the finding it should be."""
    doc = yaml.safe_load(
        (Path(__file__).parents[2] / "examples" / "rag-chat.yaml").read_text(encoding="utf-8")
    )
    stage = next(s for s in doc["dataflow"]["stages"] if s.get("llm"))
    stage["llm"]["budgets"]["user_ttft_p99_ms"] = 0
    res = load_text(yaml.safe_dump(doc, sort_keys=False), "zero.yaml")
    assert res.spec is not None
    diags = run_rules(res.spec, select=["AK705"])
    assert [d.code for d in diags] == ["AK705"], [d.message for d in diags]
    assert "(the budget is 0 ms)" in diags[0].message
