"""A stage that fans out (line crops of a page) sees items_per_request × the request rate; with a
measured `fanout.table` the simulation draws each visit's items and calls from it (issue 29)."""

from __future__ import annotations

import numpy as np
import pytest

from archkit.perf.capacity import stage_capacity, worker_capacities
from archkit.perf.pipeline import prepare
from archkit.perf.pipesim import fanout_draws, simulate_pipeline
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {name: fanout}
budgets: {p99_ms: 3000, throughput_rps: 0.5}
dataflow:
  stages:
    - id: crop
      kind: preprocess
      concurrency: 2
      p50_ms: 10
      items_per_request: {k}
    - id: recognise
      kind: model
      items_per_request: {k}
      model:
        name: rec
        device: cpu
        instances: 2
        service_time: [{batch_size: 1, compute_ms: 92}]
"""


def _spec(k):
    res = load_text(SPEC.replace("{k}", str(k)))
    assert res.ok, res.diagnostics
    return res.spec


def test_model_stage_rate_and_utilisation_scale_with_items_per_request():
    one, eight = (stage_capacity(s, s.stage("recognise")) for s in (_spec(1), _spec(8.1)))
    assert one.arrival_rps == 0.5 and eight.arrival_rps == 0.5 * 8.1
    assert abs(eight.declared.rho - 8.1 * one.declared.rho) < 1e-9


def test_worker_stage_rate_scales_with_items_per_request():
    (one,), (eight,) = worker_capacities(_spec(1)), worker_capacities(_spec(8.1))
    assert eight.arrival_rps == 0.5 * 8.1 and abs(eight.rho - 8.1 * one.rho) < 1e-9


# One recogniser instance, batches of at most 3 crops, 10 / 20 / 60 ms a batch of 1 / 2 / 3 (a
# batch of three is slow on purpose: it tells how a visit's items were split into calls).
TABLE_SPEC = """\
apiVersion: archkit/v1
metadata: {name: fanout-table}
dataflow:
  stages:
    - id: recognise
      kind: model
      items_per_request: {k}
      fanout: {table: {table}}
      model:
        name: rec
        instances: 1
        items_per_call: 3
        batching: {max_batch_size: 3, max_queue_delay_us: 0}
        service_time:
          - {batch_size: 1, compute_ms: 10}
          - {batch_size: 2, compute_ms: 20}
          - {batch_size: 3, compute_ms: 60}
"""


def _table_spec(k: str, table: str):
    res = load_text(TABLE_SPEC.replace("{k}", k).replace("{table}", table))
    assert res.ok, res.diagnostics
    return res.spec


def test_the_draws_take_each_row_by_its_weight_share():
    """Rows [2, 1, 1] and [5, 3, 3]: cumulative weights 1 and 4, so a draw u picks the first row
    while 4u < 1 (a quarter of the visits), the second from u = 0.25 on."""
    table = [(2, 1, 1.0), (5, 3, 3.0)]
    items, calls = fanout_draws(table, np.array([0.0, 0.2, 0.2499, 0.25, 0.5, 0.999]))
    assert items.tolist() == [2, 2, 2, 5, 5, 5] and calls.tolist() == [1, 1, 1, 3, 3, 3]
    items, calls = fanout_draws(table, np.random.default_rng(3).random(100_000))
    assert abs(float((items == 2).mean()) - 0.25) < 0.005  # 4.4 standard deviations of the share
    assert ((items == 2) == (calls == 1)).all()  # items and calls come from the same row


def test_a_visit_sends_the_tables_calls_with_the_items_split_evenly():
    """7 crops in 3 calls, split as evenly as they go: 3, 2, 2. The instance takes the 3 alone
    (3 + 2 > 3), then the 2s one at a time: 60 + 20 + 20 = 100 ms. (Split full calls first, 3, 3, 1,
    it would be 60 + 60 + 10 = 130 ms; by the handler, ⌈7 / 3⌉ = 3 calls of 3, 3, 1 as well.)
    Without the table the same 7 crops go as 3, 3, 1: 130 ms."""
    lm = prepare(_table_spec("7", "[[7, 3, 1]]"))
    sim = simulate_pipeline(lm[0], lm[1], rate_rps=0.01, requests=50, seed=1)
    (st,) = sim.stages
    assert (st.p50_ms, st.p99_ms) == (pytest.approx(100.0), pytest.approx(100.0))
    bare = load_text(TABLE_SPEC.replace("{k}", "7").replace("      fanout: {table: {table}}\n", ""))
    assert bare.spec is not None
    lm = prepare(bare.spec)
    (st,) = simulate_pipeline(lm[0], lm[1], rate_rps=0.01, requests=50, seed=1).stages
    assert st.p50_ms == pytest.approx(130.0)


def test_two_rows_give_each_visit_its_rows_latency_in_its_share():
    """[7, 3, 1] (100 ms, above) and [2, 2, 3]: two calls of one crop, taken together as one batch
    of 2, 20 ms. A quarter of the visits take 100 ms: mean 0.25 × 100 + 0.75 × 20 = 40 ms, P50 20,
    P99 100. The items a visit carries average 0.25 × 7 + 0.75 × 2 = 3.25 (items_per_request).
    Rates far apart (0.01 req/s): no visit waits for another. The same seed draws the same run."""
    spec = _table_spec("3.25", "[[7, 3, 1], [2, 2, 3]]")
    lm = prepare(spec)
    sim = simulate_pipeline(lm[0], lm[1], rate_rps=0.01, requests=4000, seed=5, compiled=False)
    (st,) = sim.stages
    assert st.visits == 4000 and (st.p50_ms, st.p99_ms) == (pytest.approx(20.0), pytest.approx(100.0))
    # the share of 100 ms visits: 0.25 ± 0.007 (one standard deviation of 4,000 draws), so ±2 ms
    assert st.mean_ms == pytest.approx(40.0, abs=2.0)
    again = simulate_pipeline(lm[0], lm[1], rate_rps=0.01, requests=4000, seed=5)  # compiled: the same run
    assert again.stages == sim.stages and again.p99_ms == sim.p99_ms
