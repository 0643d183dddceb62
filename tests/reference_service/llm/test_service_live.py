"""The reference LLM service live: the real llama-server behind the gateway (tests/llm_engine.py).

Deterministic greedy outputs, exact output lengths with ignore_eos, usage in streams, the caps,
the admission limit's 429, context overflow as 400; then `archkit runbook --run` walks the spec's
fault tree against it: clean while idle, and it confirms "every slot busy" while both slots
generate long answers.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request

import pytest

from archkit import api
from archkit.runbook import walk
from tests.llm_engine import SPEC, get, post, service

pytestmark = pytest.mark.live
CHAT = {"messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 16}
HOSTPORT = re.compile(r"127\.0\.0\.1:(8090|8091)\b")


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    with service(tmp_path_factory.mktemp("llm"), "--max-inflight", "3") as s:
        yield s


def _stream(url: str, body: dict) -> tuple[list[dict], dict | None]:
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        json.dumps({**body, "stream": True}).encode(),
        {"Content-Type": "application/json"},
    )
    events = []
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append(json.loads(line[6:]))
    usage = next((e["usage"] for e in events if e.get("usage")), None)
    return events, usage


def _retarget(svc) -> object:
    spec = api.load(SPEC).spec
    ports = {"8090": svc.url.rsplit(":", 1)[1], "8091": svc.engine_url.rsplit(":", 1)[1]}
    for tree in spec.faulttrees:
        for e in tree.events:
            e.check = HOSTPORT.sub(lambda m: f"127.0.0.1:{ports[m.group(1)]}", e.check or "")
    return spec


def test_the_fault_tree_walks_clean_while_the_service_is_idle(svc) -> None:
    report = walk(_retarget(svc), "llm-unavailable")
    assert report.cause is None, [(r.event, r.reason, r.output[:200]) for r in report.results]
    assert {r.status for r in report.results} == {"healthy"}


def test_greedy_answers_repeat_and_ignore_eos_gives_exact_lengths(svc) -> None:
    (s1, a), (s2, b) = (
        post(svc.url + "/v1/chat/completions", CHAT),
        post(svc.url + "/v1/chat/completions", CHAT),
    )
    assert s1 == s2 == 200
    assert a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"] != ""
    status, c = post(svc.url + "/v1/chat/completions", {**CHAT, "max_tokens": 40, "ignore_eos": True})
    assert status == 200 and c["usage"]["completion_tokens"] == 40


def test_a_stream_carries_usage_and_one_token_per_content_chunk(svc) -> None:
    events, usage = _stream(svc.url, {**CHAT, "max_tokens": 24, "ignore_eos": True})
    content = [
        e for e in events if any((ch.get("delta") or {}).get("content") for ch in e.get("choices", []))
    ]
    assert usage is not None and usage["completion_tokens"] == 24
    assert len(content) == 24  # llama-server streams one token per chunk
    status, text = get(svc.url + "/metrics")
    assert re.search(r"^llm_time_to_first_token_seconds_count [1-9]", text, re.M), text


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({**CHAT, "max_tokens": 513}, 422, "bad_max_tokens"),
        ({"messages": [{"role": "user", "content": "x" * 8001}]}, 413, "prompt_too_long"),
        # ~1,500 tokens: within the character cap, over a slot's 1,024-token context
        (
            {"messages": [{"role": "user", "content": "word " * 1500}], "max_tokens": 8},
            400,
            "context_overflow",
        ),
    ],
)
def test_what_does_not_fit_is_refused_with_its_code(svc, body, status, code) -> None:
    got, doc = post(svc.url + "/v1/chat/completions", body)
    assert (got, doc["error"]["code"]) == (status, code), doc


def test_every_slot_busy_is_found_by_the_walk_and_the_admission_limit_sheds(svc) -> None:
    """Two long answers fill both slots (the walk confirms it), a third waits in the engine, a fourth gets 429."""
    long = {**CHAT, "max_tokens": 300, "ignore_eos": True}
    results: list[int] = []

    def run() -> None:
        results.append(post(svc.url + "/v1/chat/completions", long, timeout_s=180)[0])

    def until(url: str, pattern: str) -> bool:
        for _ in range(200):
            if re.search(pattern, get(url + "/metrics")[1], re.M):
                return True
            time.sleep(0.05)
        return False

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads[:2]:
        t.start()
    assert until(svc.engine_url, r"^llamacpp:requests_processing 2$")
    report = walk(_retarget(svc), "llm-unavailable")
    threads[2].start()
    assert until(svc.url, r"^llm_inflight_requests 3\.0$")
    status, doc = post(svc.url + "/v1/chat/completions", CHAT)
    for t in threads:
        t.join()
    assert report.cause == "slots-exhausted", [(r.event, r.output[:100]) for r in report.results]
    assert (status, doc["error"]["code"]) == (429, "overloaded")
    assert results == [200, 200, 200]


def test_serve_exits_1_when_the_engine_is_never_ready(tmp_path) -> None:
    """`serve --external-engine` on a port where no engine listens: the gateway starts but never gets
    ready, so after `--ready-timeout` the command says so and exits 1 (it exited 0 before: uvicorn had
    started), leaving no run folder behind."""
    import subprocess

    from tests.llm_engine import ROOT, free_port

    python = ROOT / "reference_service" / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    before = set(tmp_path.glob("llm-*"))
    cmd = [str(python), "-m", "reference_service.llm", "serve", "--external-engine", "--engine-port"]
    cmd += [str(free_port()), "--http-port", str(free_port()), "--ready-timeout", "1"]
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert res.returncode == 1, (res.stdout, res.stderr[-2000:])
    assert "not ready after 1 s" in res.stderr and "ready:" not in res.stdout
    assert set(tmp_path.glob("llm-*")) == before
