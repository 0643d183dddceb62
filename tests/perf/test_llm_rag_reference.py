"""The RAG variant of the LLM reference spec (specs/llm-rag-reference.yaml), offline: check and capacity.

Hand-computed from the spec and its cpu calibration (specs/calibration/llm-reference-cpu.json):
the stages before generation are validate (P99 20 ms), embed (500 ms) and search (5 ms), 525 ms
that add to what a user waits for the first token; the engine prefills the 126 prompt tokens the
shared prefix does not cover (150 - 24) in 4.38935 x 126 = 553.1 ms (the fit's intercept, -29.2
ms, is negative: no fixed cost, as efficiency() clips it); the RAG prompt holds a slot longer than
the plain variant's 67 tokens with 66 cached, so its capacity is lower.
"""

from __future__ import annotations

import pytest

from archkit import api
from archkit.perf.llm import analysis
from archkit.plans.context import prepare
from tests.conftest import ROOT

RAG = ROOT / "specs" / "llm-rag-reference.yaml"
PLAIN = ROOT / "specs" / "llm-reference.yaml"


def _analyse(path):
    spec = prepare(path, "cpu").spec
    stage = spec.stage("generate")
    return spec, stage, analysis.analyse(spec, stage, base=path.parent, search=True)


def test_the_rag_spec_checks_without_errors() -> None:
    for env in (None, "cpu"):
        res = api.check([RAG], env=env)
        assert res.diagnostics and not res.failed, [d.text() for d in res.diagnostics]


def test_retrieval_adds_to_the_first_token_and_the_longer_prompt_lowers_the_capacity() -> None:
    spec, stage, rag = _analyse(RAG)
    assert analysis.pre_llm_ms(spec, stage) == (525.0, ["validate", "embed", "search"])
    uncached_prefill = max(-29.1699, 0.0) + 4.38935 * (150 - 24)
    assert uncached_prefill == pytest.approx(553.1, abs=0.1)
    ttft_p50 = rag.summary.ttft_ms["p50"]
    # at 0.1 req/s two slots rarely queue: the prefill, the per-request costs and little more
    assert uncached_prefill <= ttft_p50 <= uncached_prefill * 1.15, ttft_p50
    assert not rag.missed, [v.field for v in rag.missed]
    _s, _st, plain = _analyse(PLAIN)
    # the engine's capacity falls (126 tokens to prefill against the plain variant's 1); its knee,
    # where a token budget breaks, does not compare: the RAG budgets are looser (TTFT P50 3 s, 1 s)
    assert rag.capacity_rps < plain.capacity_rps
