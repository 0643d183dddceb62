"""The LLM gateway's request rules (reference_service/llm/protocol.py), without a server."""

from __future__ import annotations

import json

import pytest

from reference_service.llm.protocol import Refused, engine_error, has_content, prepare
from reference_service.llm.settings import LlmSettings

S = LlmSettings()


def _chat(**kw) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": "hi"}], **kw}).encode()


def test_a_plain_request_becomes_greedy_seeded_and_capped() -> None:
    fwd = prepare(_chat(), "chat", S)
    assert fwd["temperature"] == 0.0 and fwd["seed"] == S.seed
    assert fwd["max_tokens"] == S.default_output_tokens and fwd["model"] == S.model_name


def test_a_stream_always_asks_for_usage_and_keeps_the_clients_options() -> None:
    fwd = prepare(_chat(stream=True, stream_options={"x": 1}, ignore_eos=True, max_tokens=7), "chat", S)
    assert fwd["stream_options"] == {"x": 1, "include_usage": True}
    assert fwd["ignore_eos"] is True and fwd["max_tokens"] == 7


def test_fields_outside_the_list_are_dropped() -> None:
    fwd = prepare(_chat(id_slot=0, n_probs=1000), "chat", S)
    assert "id_slot" not in fwd and "n_probs" not in fwd


@pytest.mark.parametrize(
    ("body", "route", "status", "code"),
    [
        (b"{", "chat", 400, "bad_json"),
        (b"[]", "chat", 400, "bad_json"),
        (json.dumps({"messages": []}).encode(), "chat", 422, "bad_messages"),
        (json.dumps({"messages": [{"role": "user"}]}).encode(), "chat", 422, "bad_messages"),
        (json.dumps({"prompt": ""}).encode(), "completions", 422, "bad_prompt"),
        (
            json.dumps({"prompt": "x" * (S.max_prompt_chars + 1)}).encode(),
            "completions",
            413,
            "prompt_too_long",
        ),
        (_chat(max_tokens=S.max_output_tokens + 1), "chat", 422, "bad_max_tokens"),
        (_chat(max_tokens=True), "chat", 422, "bad_max_tokens"),
        (_chat(n=2), "chat", 422, "bad_n"),
    ],
)
def test_bad_requests_are_refused_with_a_code(body: bytes, route: str, status: int, code: str) -> None:
    with pytest.raises(Refused) as exc:
        prepare(body, route, S)
    assert (exc.value.status, exc.value.code) == (status, code)


def test_the_engines_context_overflow_is_the_clients_400() -> None:
    # the body llama-server 11434 answers for a prompt over a slot's context
    text = json.dumps(
        {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 1500, "n_ctx": 1024}}
    )
    err = engine_error(400, text)
    assert (err.status, err.code) == (400, "context_overflow") and "1500" in err.message
    assert engine_error(503, "{}").code == "engine_unavailable"
    assert engine_error(500, "not json").status == 502


def test_only_chunks_with_text_count_as_content() -> None:
    assert not has_content({"choices": [{"delta": {"role": "assistant"}}]})
    assert not has_content({"choices": [], "usage": {"completion_tokens": 3}})
    assert has_content({"choices": [{"delta": {"content": "Hi"}}]})
    assert has_content({"choices": [{"text": "Hi"}]})
