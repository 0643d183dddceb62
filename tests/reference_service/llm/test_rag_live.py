"""The RAG variant live: gateway, generating llama-server and embedding llama-server (--embeddings).

One streamed question goes through validate -> embed -> search -> generate -> relay. The test
checks, each against a real part: the passages the gateway says it retrieved are the top 3 of an
index the test builds itself from the embedder's vectors (plain NumPy, not the gateway's code);
the engine's prompt held them (the stream's usage.prompt_tokens equals llama-server's own
/apply-template + /tokenize count of the question with those passages, and not without them);
every spec stage past ingress has its `llm_stage_duration_seconds` series; `archkit verify`'s
llama.cpp source is clean against the RAG spec; the resident-memory gauge of each engine is its
process's VmRSS. 24 passages (the index is built at start, ~0.4 s a passage on busy cores) and a
5-minute readiness limit, so a loaded machine slows the test but does not fail it.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from archkit.spec import load_file
from archkit.verify import Status, verify_spec
from reference_service.llm import rag
from tests.conftest import ROOT
from tests.llm_engine import engine_files, free_port, get, service

pytestmark = pytest.mark.live
RAG_SPEC = ROOT / "specs" / "llm-rag-reference.yaml"
N_PASSAGES = 24
QUESTION = [{"role": "user", "content": "What colour is the lighthouse of Corgalal?"}]


@dataclass
class RagService:
    url: str
    engine_url: str
    embed_url: str
    proc: subprocess.Popen


@contextlib.contextmanager
def rag_service(tmp: Path) -> Iterator[RagService]:
    emb = free_port()
    extra = ["--rag", "--embed-port", str(emb), "--passages", str(N_PASSAGES)]
    extra += ["--index-dir", str(tmp / "index"), "--ready-timeout", "300"]
    with service(tmp, *extra, ready_timeout_s=300.0) as s:
        yield RagService(s.url, s.engine_url, f"http://127.0.0.1:{emb}", s.proc)


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with rag_service(tmp_path_factory.mktemp("rag")) as s:
        yield s


def _post(url: str, body: dict, timeout_s: float = 120.0):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout_s)


def _json(url: str, body: dict):
    with _post(url, body) as r:
        return json.loads(r.read())


def _stream(url: str, body: dict) -> tuple[dict[str, str], dict]:
    """The response headers and the stream's usage."""
    usage: dict = {}
    with _post(url + "/v1/chat/completions", {**body, "stream": True}) as r:
        assert r.status == 200 and r.headers["content-type"].startswith("text/event-stream")
        headers = {k.lower(): v for k, v in r.headers.items()}
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                usage = json.loads(line[6:]).get("usage") or usage
    return headers, usage


def _prompt_tokens(engine_url: str, messages: list[dict]) -> int:
    """The engine's own count of the prompt these messages make (its chat template, its tokenizer)."""
    prompt = _json(engine_url + "/apply-template", {"messages": messages})["prompt"]
    return len(_json(engine_url + "/tokenize", {"content": prompt})["tokens"])


def _embedding(embed_url: str, text: str) -> np.ndarray:
    v = np.asarray(_json(embed_url + "/v1/embeddings", {"input": text})["data"][0]["embedding"])
    return v / np.linalg.norm(v)


def test_a_streamed_question_is_answered_from_the_top_3_passages(svc) -> None:
    headers, usage = _stream(svc.url, {"messages": QUESTION, "max_tokens": 16, "ignore_eos": True})
    found = [int(x) for x in headers["x-rag-passages"].split(",")]
    assert usage["completion_tokens"] == 16
    # the test's own index: every passage embedded by the embedder, ranked by cosine in NumPy
    texts = rag.passages(N_PASSAGES)
    matrix = np.stack([_embedding(svc.embed_url, t) for t in texts])
    scores = matrix @ _embedding(svc.embed_url, QUESTION[0]["content"])
    assert found == [int(i) for i in np.argsort(-scores, kind="stable")[:3]], scores
    # what the engine prefilled is the question with those 3 passages, not the bare question
    with_them = _prompt_tokens(svc.engine_url, rag.with_passages(QUESTION, [texts[i] for i in found]))
    assert usage["prompt_tokens"] == with_them
    assert with_them > _prompt_tokens(svc.engine_url, QUESTION) + 3 * 20
    timing = dict(re.findall(r"(\w+);dur=([0-9.]+)", headers["server-timing"]))
    assert sorted(timing) == ["embed", "search", "validate"]


def test_every_stage_of_the_spec_has_its_latency_series(svc) -> None:
    _stream(svc.url, {"messages": QUESTION, "max_tokens": 4})
    spec = load_file(RAG_SPEC).spec
    assert spec is not None
    text = get(svc.url + "/metrics")[1]
    counted = dict(re.findall(r'^llm_stage_duration_seconds_count\{stage="(\w+)"\} (\S+)$', text, re.M))
    stages = [s.id for s in spec.dataflow.stages if s.kind != "ingress"]
    assert stages == ["validate", "embed", "search", "generate", "relay"]
    assert all(float(counted.get(s, 0)) >= 1 for s in stages), counted
    # the spec binds the retrieval stages' latency to exactly these series
    bound = {o.stage: o.latency for o in spec.observability.stages if o.latency is not None}
    for s in ("embed", "search"):
        assert (bound[s].metric, bound[s].labels) == ("llm_stage_duration_seconds", {"stage": s})


def test_verify_against_the_rag_spec_is_clean(svc) -> None:
    spec = load_file(RAG_SPEC).spec
    assert spec is not None
    report = verify_spec(spec, {"llamacpp_url": svc.engine_url}, timeout_s=10.0)
    assert report.findings and {f.status for f in report.findings} == {Status.PASS}, [
        (f.code, f.message) for f in report.findings
    ]


def _children(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`, with their command lines."""
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (d / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    out[int(d.name)] = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    return out


def _vmrss(pid: int) -> float:
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return float(line.split()[1]) * 1024


def test_each_engine_resident_memory_is_exported_for_the_memory_growth_alert(svc) -> None:
    """The gauge is the supervised llama-server's VmRSS (AK616's signal; the spec binds it)."""
    _, model = engine_files()
    kids = _children(svc.proc.pid)
    port = {"generate": svc.engine_url, "embed": svc.embed_url}
    for engine, url in port.items():
        pid = next(p for p, cmd in kids.items() if f"--port {url.rsplit(':', 1)[1]} " in cmd + " ")
        text = get(svc.url + "/metrics")[1]
        m = re.search(rf'^llm_engine_resident_memory_bytes{{engine="{engine}"}} (\S+)$', text, re.M)
        assert m, text
        exported, now = float(m.group(1)), _vmrss(pid)
        # the weights are mapped and read, so the process holds at least the GGUF's size
        assert exported > model.stat().st_size
        assert abs(exported - now) <= 0.1 * now, (engine, exported, now)
    spec = load_file(RAG_SPEC).spec
    assert spec is not None
    growth = spec.observability.golden_signals.memory_growth
    assert growth is not None and growth.metric == "llm_engine_resident_memory_bytes"
