"""Live: the openai-stream protocol against a real SSE server with exactly timed chunks (tests/loadtest/sseserver.py).

The server writes a role-only chunk at once, then content chunks at hand-set times with a
hand-set number of tokens each; every expected figure below is computed by hand from those.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.process import stop

from .conftest import HERE, free_port

pytestmark = pytest.mark.live


@pytest.fixture
def sse_server():
    started: list[subprocess.Popen] = []

    def start(**opts) -> str:
        port = free_port()
        args = [sys.executable, str(HERE / "sseserver.py"), "--port", str(port)]
        for k, v in opts.items():
            flag = f"--{k.replace('_', '-')}"
            args += [flag] if v is True else [flag, str(v)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return f"http://127.0.0.1:{port}"

    yield start
    for proc in started:
        stop(proc, timeout=5)


def _spec(tmp_path: Path, url: str, path: str, body: dict) -> Path:
    data = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "sse"},
        "budgets": {"p99_ms": 5000, "throughput_rps": 5},
        "loadtest": {
            "target": {"protocol": "openai-stream", "host": url},
            "scenarios": [
                {
                    "id": "chat",
                    "path": path,
                    "payload": {"template": json.dumps(body), "content_type": "application/json"},
                }
            ],
            "levels": [{"id": "baseline", "kind": "baseline", "users": 4, "rate_rps": 5, "duration_s": 2}],
        },
    }
    out = tmp_path / "sse.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return out


def _server_log(url: str) -> list[dict]:
    return json.loads(urllib.request.urlopen(url + "/log", timeout=5).read())


def test_ttft_every_gap_per_token_and_the_chunks_per_token_ratio(sse_server, tmp_path) -> None:
    """Chunks of 1, 3, 1, 3, 1 tokens (usage on every chunk): 9 tokens, 5 content chunks.

    Gaps of 40 ms after the first chunk at 60 ms: per request 8 inter-token values, 6 of
    40/3 ms (the two 3-token chunks) and 2 of 40 ms, so P50 40/3 ms and P95 40 ms;
    TPOT (220 - 60) / (9 - 1) = 20 ms; chunks per token 5/9.
    """
    url = sse_server(first_ms=60, gap_ms=40, chunks=5, tokens="1,3", usage_per_chunk=True)
    spec = _spec(tmp_path, url, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    res = api.loadtest(spec, "baseline", prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    assert e2e["requests"] == 10 and e2e["errors"] == 0, (e2e, res.data.log[-2000:])
    m = e2e["measures"]
    assert m["ttft_ms"]["count"] == 10 and m["itl_ms"]["count"] == 80
    assert m["chunks_per_token"] == {
        "content_chunks": 50,
        "output_tokens": 90,
        "ratio": 0.5556,
        "unit": "ratio",
    }
    # the role-only chunk at ~0 ms is not the first token: TTFT is the 60 ms chunk
    assert 60 <= m["ttft_ms"]["p50_ms"] <= 75
    assert m["itl_ms"]["p50_ms"] == pytest.approx(40 / 3, rel=0.15)
    assert m["itl_ms"]["p95_ms"] == pytest.approx(40, rel=0.15)  # the nominal gaps; the machine adds jitter
    assert m["tpot_ms"]["p50_ms"] == pytest.approx(20, rel=0.15)
    # the gaps the server really wrote, per token (1, 3, 1, 3 tokens after the first chunk)
    per_token = sorted(
        (b - a) * 1000 / k
        for r in _server_log(url)
        for a, b, k in zip(r["chunks"], r["chunks"][1:], (3, 1, 3, 1), strict=False)
        for _ in range(k)
    )
    assert m["itl_ms"]["p50_ms"] == pytest.approx(per_token[39], abs=1.0)  # the 40th of 80 values
    # the 76th: a tail value, where the client's own wake-ups on a loaded machine add a little
    assert m["itl_ms"]["p95_ms"] == pytest.approx(per_token[75], rel=0.05)
    # headers leave before the role chunk, well before the first token
    assert m["setup_ms"]["count"] == 10 and m["setup_ms"]["p50_ms"] < m["ttft_ms"]["p50_ms"] - 40
    assert m["output_tokens_per_s"]["p50"] == pytest.approx(9 / 0.22, rel=0.15)  # 9 tokens in 220 ms
    log = _server_log(url)
    assert [r["request"]["stream"] for r in log] == [True] * 10
    assert all(r["request"]["stream_options"] == {"include_usage": True} for r in log)


def test_usage_only_at_the_end_is_spread_over_the_chunks_of_a_completions_stream(
    sse_server, tmp_path
) -> None:
    """Four chunks of 2 tokens, usage only in the last event: 8 tokens over 4 chunks, 2 each.

    Per request 3 gaps of 30 ms, each 2 tokens: 6 values of 15 ms. Measured against the
    server's own write times: the client's per-token gap is the server's gap / 2.
    """
    url = sse_server(first_ms=20, gap_ms=30, chunks=4, tokens="2")
    spec = _spec(tmp_path, url, "/v1/completions", {"prompt": "hi", "max_tokens": 8})
    res = api.loadtest(spec, "baseline", prometheus=False, plots=False).result
    m = res.measured["end_to_end"]["measures"]
    assert m["itl_ms"]["count"] == 60 and m["chunks_per_token"]["ratio"] == 0.5
    server_gaps = sorted(
        (b - a) * 1000 / 2
        for r in _server_log(url)
        for a, b in zip(r["chunks"], r["chunks"][1:], strict=False)
    )
    assert m["itl_ms"]["p50_ms"] == pytest.approx(15, abs=1.5)
    assert m["itl_ms"]["p50_ms"] == pytest.approx(server_gaps[len(server_gaps) // 2], abs=1.0)


def test_an_llm_stage_workload_makes_the_bodies_and_its_token_budgets_are_judged(
    sse_server, tmp_path
) -> None:
    """Prompts of 16 tokens, outputs uniform in 3..6 tokens, half the requests under one of 2 prefixes.

    The server sends one chunk per requested token, the first at 40 ms, then every 20 ms: TTFT
    ~40 ms meets a 200 ms budget, ITL ~20 ms misses a 5 ms one at P50, and a P99 of 20-50 gaps
    decides nothing (it needs 368); every verdict says its n.
    """
    url = sse_server(first_ms=40, gap_ms=20, honour_max_tokens=True)
    data = yaml.safe_load(_spec(tmp_path, url, "/v1/chat/completions", {}).read_text())
    data["dataflow"] = {
        "stages": [
            {
                "id": "gen",
                "kind": "llm",
                "llm": {
                    "engine": {"name": "llama.cpp"},
                    "model": {"preset": "SmolLM2-135M", "name": "smollm2"},
                    "workload": {
                        "prompt_tokens": {"mean_tokens": 16},
                        "output_tokens": {"distribution": "uniform", "min_tokens": 3, "max_tokens": 6},
                        "shared_prefix": {"groups": 2, "tokens": 8, "share": 0.5},
                    },
                    "budgets": {"ttft_p50_ms": 200, "itl_p50_ms": 5, "itl_p99_ms": 5},
                },
            }
        ]
    }
    sc = data["loadtest"]["scenarios"][0]
    sc["llm_stage"] = "gen"
    sc["payload"] = {"template": '{"seed": 7}', "content_type": "application/json"}
    spec = tmp_path / "llm.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    res = api.loadtest(spec, "baseline", prometheus=False, plots=False).result
    log = _server_log(url)
    assert len(log) == 10
    bodies = [r["request"] for r in log]
    assert all(b["model"] == "smollm2" and b["seed"] == 7 and b["ignore_eos"] is True for b in bodies)
    assert all(3 <= b["max_tokens"] <= 6 for b in bodies) and len({b["max_tokens"] for b in bodies}) > 1
    prompts = [b["messages"][0]["content"] for b in bodies]
    plain = [p for p in prompts if p == " a" * 16]
    prefixed = [p for p in prompts if p[:2] in ("0:", "1:")]
    assert len(plain) + len(prefixed) == 10 and all(p.endswith(" a" * 8) for p in prefixed)
    tokens = sum(b["max_tokens"] for b in bodies)
    m = res.measured["scenarios"]["chat"]["measures"]
    assert m["chunks_per_token"]["output_tokens"] == tokens and m["chunks_per_token"]["ratio"] == 1.0
    assert m["itl_ms"]["count"] == tokens - 10  # every token after each request's first
    verdicts = {v.id: v for v in res.verdicts if v.id.startswith("llm.")}
    ttft = verdicts["llm.gen.ttft_p50_ms"]
    assert ttft.outcome == "pass" and "from 10 samples" in ttft.why
    assert verdicts["llm.gen.itl_p50_ms"].outcome == "fail"
    assert verdicts["llm.gen.itl_p99_ms"].outcome == "inconclusive"
    assert res.passed is False
    located = {r.name: r for r in res.located}
    assert located["llm.gen.itl_p50_ms"].code == "LT130"


def test_a_distributed_run_merges_the_streaming_measures_exactly(sse_server, tmp_path) -> None:
    """A locust master and two workers: each worker's histograms and token counters add up to the run's."""
    url = sse_server(first_ms=30, gap_ms=15, chunks=4, tokens="1")
    spec = _spec(tmp_path, url, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    res = api.loadtest(spec, "baseline", workers=2, prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    served = len(_server_log(url))
    assert e2e["requests"] == served and 8 <= served <= 12, e2e  # 5 req/s for 2 s over both workers
    m = e2e["measures"]
    assert m["ttft_ms"]["count"] == served and m["itl_ms"]["count"] == 3 * served
    assert m["chunks_per_token"]["output_tokens"] == 4 * served and m["chunks_per_token"]["ratio"] == 1.0
