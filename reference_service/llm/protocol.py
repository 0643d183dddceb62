"""The gateway's request rules, free of any web framework: validation, caps, defaults, engine errors."""

from __future__ import annotations

import json

from .settings import LlmSettings

# Request fields passed on to the engine; anything else is dropped (no engine-wide switches such
# as `n_probs` over the cap, no `id_slot` pinning around the admission limit).
FORWARDED = {
    "model",
    "messages",
    "prompt",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stream",
    "stream_options",
    "ignore_eos",
    "stop",
    "presence_penalty",
    "frequency_penalty",
    "repeat_penalty",
}


class Refused(Exception):
    """A request the gateway answers itself with a 4xx/5xx and a short message."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


def prepare(body: bytes, route: str, s: LlmSettings) -> dict:
    """The engine request: validated, capped, deterministic by default (Refused otherwise)."""
    try:
        req = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Refused(400, "bad_json", "body is not JSON") from None
    if not isinstance(req, dict):
        raise Refused(400, "bad_json", "body must be a JSON object")
    if route == "chat":
        msgs = req.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise Refused(422, "bad_messages", "messages must be a non-empty list")
        if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in msgs):
            raise Refused(422, "bad_messages", "each message needs a string content")
        chars = sum(len(m["content"]) for m in msgs)
    else:
        prompt = req.get("prompt")
        if not isinstance(prompt, str) or not prompt:
            raise Refused(422, "bad_prompt", "prompt must be a non-empty string")
        chars = len(prompt)
    if chars > s.max_prompt_chars:
        raise Refused(413, "prompt_too_long", f"prompt is {chars} characters; limit is {s.max_prompt_chars}")
    if req.get("n", 1) != 1:
        raise Refused(422, "bad_n", "n must be 1")
    out = req.get("max_tokens", req.get("max_completion_tokens", s.default_output_tokens))
    if not isinstance(out, int) or isinstance(out, bool) or not 1 <= out <= s.max_output_tokens:
        raise Refused(422, "bad_max_tokens", f"max_tokens must be an integer from 1 to {s.max_output_tokens}")
    fwd = {k: v for k, v in req.items() if k in FORWARDED}
    fwd["max_tokens"] = out
    fwd.setdefault("temperature", 0.0)
    fwd.setdefault("seed", s.seed)
    fwd["model"] = s.model_name
    if fwd.get("stream"):
        # usage in the last chunk: token counts for the metrics and for load generators
        opts = fwd.get("stream_options") if isinstance(fwd.get("stream_options"), dict) else {}
        fwd["stream_options"] = {**opts, "include_usage": True}
    return fwd


def engine_error(status: int, text: str) -> Refused:
    """The engine's error answer as the gateway's: context overflow is the client's 400."""
    try:
        err = json.loads(text).get("error", {})
    except (ValueError, AttributeError):
        err = {}
    err = err if isinstance(err, dict) else {}
    if err.get("type") == "exceed_context_size_error":
        return Refused(
            400,
            "context_overflow",
            f"prompt of {err.get('n_prompt_tokens', '?')} tokens does not fit the context of "
            f"{err.get('n_ctx', '?')} tokens per request",
        )
    if status == 503:
        return Refused(503, "engine_unavailable", "the model is loading; retry later", 1)
    if 400 <= status < 500:
        return Refused(status, "engine_refused", str(err.get("message", "refused by the engine"))[:200])
    return Refused(502, "engine_error", f"engine answered {status}")


def has_content(event: object) -> bool:
    """Whether an SSE chunk carries output text (a role-only or usage-only chunk does not)."""
    if not isinstance(event, dict):
        return False
    for choice in event.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
        if text:
            return True
    return False
