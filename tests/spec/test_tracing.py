"""The tracing section (archkit.spec.tracing): spans on external calls (seed 000 §4.3)."""

from __future__ import annotations

from archkit.spec import load_text

HEAD = "apiVersion: archkit/v1\nmetadata: {name: t}\n"


def test_tracing_defaults_and_bounds():
    ok = load_text(HEAD + "tracing: {}\n", "t.yaml")
    assert ok.ok and ok.spec is not None and ok.spec.tracing is not None
    assert (ok.spec.tracing.exporter, ok.spec.tracing.sample_ratio, ok.spec.tracing.external_calls) == (
        "otlp",
        1.0,
        True,
    )
    bad = load_text(HEAD + "tracing: {sample_ratio: 1.5, exporter: skywalking}\n", "t.yaml")
    assert not bad.ok
    texts = [d.text() for d in bad.diagnostics]
    assert any("t.yaml:3:" in t and "sample_ratio" in t for t in texts), texts
    assert any("exporter" in t for t in texts), texts
