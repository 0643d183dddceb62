"""The governance section (archkit.spec.governance): jobs, sign-offs, consent, breakers, owners."""

from __future__ import annotations

from archkit.checks import run_rules
from archkit.checks.ak512_design_not_signed_off import design_sha256
from archkit.spec import load_text

HEAD = "apiVersion: archkit/v1\nmetadata: {name: t}\n"
TOPO = "topology:\n  node_pools: [{id: pool}]\n  services: [{id: svc, pool: pool}]\n"


def test_job_ids_and_references_are_resolved():
    """Job ids are a namespace of their own (AK102) and a job's service must exist (AK103)."""
    res = load_text(
        HEAD + TOPO + "jobs:\n  - {id: nightly, service: svc, max_concurrency: 3}\n"
        "  - {id: nightly, service: nosuch, max_concurrency: 3}\n",
        "t.yaml",
    )
    assert res.ok and res.spec is not None
    found = {(d.code, d.line) for d in run_rules(res.spec, select=["AK102", "AK103"])}
    assert found == {("AK102", 8), ("AK103", 8)}


def test_breaker_fallback_is_a_stage_reference():
    res = load_text(
        HEAD + "dataflow:\n  stages:\n  - id: vit\n    kind: model\n"
        "    model: {name: vit, confidence_breaker: {output: pred_confidence, fallback: resnet}}\n",
        "t.yaml",
    )
    assert res.ok and res.spec is not None
    [d] = [d for d in run_rules(res.spec, select=["AK103"])]
    assert (d.line, "resnet" in d.message) == (7, True)


def test_signoff_hash_is_checked_and_ignores_comments_layout_and_signoffs():
    bad = load_text(
        HEAD.replace(
            "{name: t}", "\n  name: t\n  signoffs: [{by: x, spec_sha256: nothex, date: 2026-12-01}]"
        ),
        "t.yaml",
    )
    assert not bad.ok
    assert any("spec_sha256" in d.text() for d in bad.diagnostics)
    a = load_text(HEAD + "dataflow:\n  stages: [{id: a, kind: gateway}]\n", "a.yaml").spec
    b = load_text(
        "apiVersion: archkit/v1  # the same design\nmetadata:\n  name: t\n"
        "  signoffs: [{by: x, spec_sha256: " + "ab" * 32 + ", date: 2026-12-01}]\n"
        "dataflow:\n  stages:\n    - {kind: gateway, id: a}\n",
        "b.yaml",
    ).spec
    c = load_text(HEAD + "dataflow:\n  stages: [{id: a, kind: gateway, p99_ms: 5}]\n", "c.yaml").spec
    assert a is not None and b is not None and c is not None
    assert design_sha256(a) == design_sha256(b) != design_sha256(c)
