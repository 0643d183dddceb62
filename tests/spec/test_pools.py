"""The connection-pool section (archkit.spec.pools, seed 004 §1): references and bounds."""

from __future__ import annotations

from archkit.checks import run_rules
from archkit.spec import load_text

HEAD = """\
apiVersion: archkit/v1
metadata: {name: t}
dataflow:
  stages: [{id: cache, kind: cache, service: redis, p99_ms: 35}]
topology:
  node_pools: [{id: cpu}]
  services: [{id: api, pool: cpu}, {id: redis, pool: cpu}]
"""


def test_pool_defaults():
    res = load_text(HEAD + "connection_pools: [{id: p, client: api, target: cache, size: 10}]\n", "t.yaml")
    assert res.ok and res.spec is not None
    (cp,) = res.spec.connection_pools
    assert (cp.calls_per_visit, cp.hold_ms, cp.checkout_timeout_ms, cp.in_use) == (1.0, None, None, None)


def test_size_bound_names_line_and_field():
    res = load_text(HEAD + "connection_pools: [{id: p, client: api, target: cache, size: 0}]\n", "t.yaml")
    assert not res.ok
    texts = [d.text() for d in res.diagnostics]
    assert any(t.startswith("t.yaml:8:") and "size" in t for t in texts), texts


def test_dangling_client_and_target_are_ak103():
    res = load_text(HEAD + "connection_pools: [{id: p, client: web, target: redis, size: 4}]\n", "t.yaml")
    assert res.ok and res.spec is not None
    found = [d for d in run_rules(res.spec, select=["AK103"])]
    assert sorted(d.message.split("'")[1] for d in found) == ["redis", "web"], [d.text() for d in found]
