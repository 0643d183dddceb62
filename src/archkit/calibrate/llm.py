"""`archkit calibrate --llm-url`: fit an LLM engine's step-time model and read its real KV capacity.

A short probe (well under two minutes on 2 cores with the reference model) of a live engine on
loopback, for each LLM stage the spec serves with llama.cpp:
1. prefill: prompts of exact token lengths (token arrays from the engine's /tokenize), one output
   token, one at a time, prompt cache off; the server's own `timings.prompt_ms` fitted as
   `fixed + per_token x tokens` (least squares);
2. decode: `c` requests at once for c = 1 .. slots (short prompts, a fixed number of output
   tokens with `ignore_eos`), and at c = 1 prompts of growing length; each request's server-side
   `timings.predicted_per_token_ms` is one decode step with c sequences running at that context,
   fitted as `step = base + per_sequence x (c - 1) + per_context_token x context`;
3. KV capacity: llama.cpp's `/slots` (context per slot, summed); vLLM's
   `vllm:cache_config_info` (num_gpu_blocks x block_size) where the engine is vLLM;
4. per request, as the workload arrives: the same short chat prompt streamed several times, each
   answered with the workload's mean output length (so that the slot holds all of it but the last
   token and trims the previous answer), each sent after an idle gap drawn from the spec's arrival
   process (`arrival_gaps`): the engine is slower after idling (llama-server's prompt time for one
   cached-prompt token was 8.25 ms back to back and 12.08 ms at Poisson 0.32 req/s, its decode
   step 7.98 and 10.83 ms: issue 31's fidelity run, docs/benchmarks.md), so back-to-back requests
   time an engine the load test never meets. Their median decode step (`predicted_per_token_ms`)
   is the one-sequence step the model decodes with; the server's `prompt_ms` beyond that step is
   the engine's set-up per request, and the client's time to the first content delta beyond
   `prompt_ms` is the share outside the engine (`per_request`).
The measured figures are also expressed as the spec's `llm.efficiency` (prefill MFU, decode
bandwidth share, step overhead) so that `environments[].calibration` can replace the declared
defaults. The machine is recorded beside them: `archkit.machine.fingerprint` with the engine
and its build as the serving software (a calibration from another machine is then told apart).
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from archkit import engines
from archkit.calibrate.sweep import CalibrationError, environment
from archkit.loadtest.safety import require_loopback
from archkit.machine import fingerprint
from archkit.spec.llm import LlmEngineName, LlmStage
from archkit.spec.model import Spec

KIND = "calibration"
FILLER = (
    "The quick brown fox jumps over the lazy dog while the engineers measure every step of the "
    "engine, one token after another, until the numbers settle. "
)


@dataclass
class LlmOptions:
    url: str = "http://127.0.0.1:8091"
    env: str | None = None
    prefill_tokens: tuple[int, ...] = (32, 128, 256, 512)
    decode_tokens: int = 48  # output tokens per decode request
    context_tokens: tuple[int, ...] = (32, 256, 640)  # prompt lengths for the context sweep (c = 1)
    repeats: int = 3
    # streamed requests of the per-request probe (the first fills the cache): 16, not 8, because the
    # median of 7 moved between two modes (12.6-15.8 and 8.1-8.7 ms of prompt time, docs/benchmarks.md)
    request_repeats: int = 16
    # the per-request probe's idle gaps: drawn from the workload's arrival process at its rate, the
    # rate raised where needed so that the gaps sum to at most this many seconds (the probe's whole
    # budget is `budget_s`)
    arrivals_budget_s: float = 45.0
    timeout_s: float = 60.0
    budget_s: float = 120.0
    seed: int = 1


def _request(url: str, body: dict | None, timeout_s: float) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url, data, {"Content-Type": "application/json"}, method="GET" if body is None else "POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - loopback only
            raw = resp.read(16 * 1024 * 1024)
            status = resp.status
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(65536).decode(errors="replace")
    except OSError as exc:
        raise CalibrationError(f"{url}: {exc}") from None
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class LlamaCpp:
    """The few llama-server calls the probe needs (its native API: /tokenize, /completion, /slots)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        require_loopback(url, "LLM engine")
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        self.ep = engines.adapter("llama.cpp").endpoints

    def get(self, path: str) -> Any:
        status, doc = _request(self.url + path, None, self.timeout_s)
        if status != 200:
            raise CalibrationError(f"{self.url}{path} answered {status}: {str(doc)[:200]}")
        return doc

    def tokens(self, n: int) -> list[int]:
        """Exactly `n` token ids of plain English (the filler tokenized once, repeated and cut)."""
        status, doc = _request(self.url + self.ep.extra["tokenize"], {"content": FILLER}, self.timeout_s)
        if status != 200 or not isinstance(doc, dict) or not doc.get("tokens"):
            raise CalibrationError(f"{self.url}{self.ep.extra['tokenize']} answered {status}")
        ids = list(doc["tokens"])
        return (ids * (n // len(ids) + 1))[:n]

    def complete(self, prompt: list[int], n_predict: int, seed: int) -> dict:
        """One completion with the prompt cache off; the server's `timings`."""
        body = {
            "prompt": prompt,
            "n_predict": n_predict,
            "ignore_eos": True,
            "temperature": 0,
            "seed": seed,
            "cache_prompt": False,
        }
        status, doc = _request(self.url + self.ep.extra["completion"], body, self.timeout_s)
        if status != 200 or not isinstance(doc, dict) or "timings" not in doc:
            raise CalibrationError(
                f"{self.url}{self.ep.extra['completion']} answered {status}: {str(doc)[:200]}"
            )
        return dict(doc["timings"])

    def chat_stream(self, content: str, max_tokens: int, seed: int) -> tuple[float, dict]:
        """One streamed chat completion, the prompt cache on: the client's time to the first
        non-empty content delta (ms, from the send) and the server's `timings` (the last chunk's)."""
        u = urllib.parse.urlsplit(self.url)
        body = json.dumps({
            "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens,
            "stream": True, "temperature": 0, "seed": seed, "ignore_eos": True,
        }).encode()  # fmt: skip
        conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=self.timeout_s)
        try:
            t0 = time.perf_counter()
            conn.request("POST", self.ep.extra["chat"], body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise CalibrationError(f"{self.url}{self.ep.extra['chat']} answered {resp.status}")
            first, timings = None, None
            for raw in resp:
                line = raw.strip()
                if not line.startswith(b"data:") or line == b"data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                choices = chunk.get("choices") or [{}]
                if first is None and (choices[0].get("delta") or {}).get("content"):
                    first = (time.perf_counter() - t0) * 1000
                timings = chunk.get("timings") or timings
        except (OSError, ValueError) as exc:
            raise CalibrationError(f"{self.url}{self.ep.extra['chat']}: {exc}") from None
        finally:
            conn.close()
        if first is None or not isinstance(timings, dict):
            raise CalibrationError(f"{self.url}{self.ep.extra['chat']}: no content delta or no timings")
        return first, dict(timings)


def arrival_gaps(llm: LlmStage, n: int, budget_s: float, seed: int) -> list[float]:
    """`n` idle gaps (s) drawn from the workload's arrival process, at its rate unless their mean
    would exceed `budget_s / n` (then at n / budget_s req/s, so the probe keeps its time).

    Poisson or gamma as `archkit.perf.llm.sim.arrivals` draws them for the simulation; a trace, or a
    rate the spec leaves to its budgets, is Poisson at n / budget_s."""
    from archkit.perf.llm.sim import arrivals

    arr = llm.workload.arrivals
    floor = n / budget_s if budget_s > 0 else float("inf")
    rate = max(float(arr.rate_rps or 0.0), floor) if arr.process != "trace" else floor
    times = arrivals(arr, rate, n, np.random.default_rng(seed))  # a trace draws Poisson there
    return [round(float(g), 4) for g in np.diff(np.concatenate([[0.0], times]))]


def arrivals_step(samples: list[tuple[float, dict]]) -> tuple[float, float] | None:
    """The median one-sequence decode step (ms) of requests that ran alone after an idle gap, and
    the median context it decoded at (prompt + cached + half the answer): the step `per_request`
    and `efficiency` take. None without decode timings."""
    steps = [float(t["predicted_per_token_ms"]) for _, t in samples if t.get("predicted_per_token_ms")]
    if not steps:
        return None
    ctx = [
        int(t.get("prompt_n", 1)) + int(t.get("cache_n", 0)) + int(t.get("predicted_n", 0)) / 2
        for _, t in samples
        if t.get("predicted_per_token_ms")
    ]
    return round(float(np.median(steps)), 4), round(float(np.median(ctx)), 1)


def per_request(
    samples: list[tuple[float, dict]], prefill: dict, decode: dict, step: tuple[float, float] | None = None
) -> dict:
    """The per-request costs from streamed requests whose prompt the slot had cached but for a token.

    llama-server's `timings.prompt_ms` for such a request is one engine step at its context plus what
    the engine does once per request (slot selection, prompt-cache trim, sampler set-up): the
    request overhead is prompt_ms - the one-sequence step at that context - the prefill fit's
    per-token time for any further uncached token. The step is `step` = (measured ms, at context)
    moved along the decode fit's context slope, else the decode fit itself (its straight line over
    1..slots sequences and long contexts can miss a short context's step by more than the overhead).
    The client's TTFT - prompt_ms is the share outside the engine (HTTP, chat template,
    tokenisation, the first SSE write). Medians, at least 0.
    """
    engine, client = [], []
    slope = max(decode.get("per_context_token_ms", 0.0), 0.0)
    for ttft_ms, t in samples:
        n, cached = int(t.get("prompt_n", 1)), int(t.get("cache_n", 0))
        if step is None:
            one = decode["base_ms"] + slope * (n + cached)
        else:
            one = step[0] + slope * (n + cached - step[1])
        extra = max(n - 1, 0) * max(prefill["ms_per_token"], 0.0)
        engine.append(float(t["prompt_ms"]) - one - extra)
        client.append(ttft_ms - float(t["prompt_ms"]))
    return {
        "step": list(step) if step is not None else None,
        "request_overhead_ms": round(max(float(np.median(engine)), 0.0), 3),
        "client_overhead_ms": round(max(float(np.median(client)), 0.0), 3),
        "points": len(samples),
        "samples": [[round(a, 3), round(b, 3)] for a, b in zip(engine, client, strict=True)],
        # as measured: client TTFT, server prompt_ms, prompt_n, cache_n (to derive them again)
        "measured": [
            [
                round(ttft, 3),
                round(float(t["prompt_ms"]), 3),
                int(t.get("prompt_n", 1)),
                int(t.get("cache_n", 0)),
                round(float(t.get("predicted_per_token_ms") or 0.0), 4),
                int(t.get("predicted_n") or 0),
            ]
            for ttft, t in samples
        ],
    }


def kv_capacity_llamacpp(props: dict, slots: list[dict]) -> dict:
    """llama.cpp's KV capacity: every slot's context (tokens), summed; one slot is one sequence."""
    per_slot = [int(s["n_ctx"]) for s in slots if isinstance(s, dict) and "n_ctx" in s]
    return {
        "source": "llama.cpp /slots n_ctx",
        "slots": int(props.get("total_slots") or len(per_slot)),
        "tokens_per_slot": min(per_slot) if per_slot else None,
        "tokens": sum(per_slot),
    }


_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}\s", re.M)


def kv_capacity_vllm(metrics_text: str) -> dict:
    """vLLM's KV capacity from `vllm:cache_config_info` (a gauge of 1 whose labels carry the cache config)."""
    m = _INFO.search(metrics_text)
    if m is None:
        raise CalibrationError("no vllm:cache_config_info series in the engine's /metrics")
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
    try:
        blocks, size = int(labels["num_gpu_blocks"]), int(labels["block_size"])
    except (KeyError, ValueError):
        raise CalibrationError(
            f"vllm:cache_config_info lacks num_gpu_blocks or block_size: {labels}"
        ) from None
    return {"source": "vllm:cache_config_info", "blocks": blocks, "block_size": size, "tokens": blocks * size}


def fit_prefill(points: list[tuple[int, float]]) -> dict:
    """prompt_ms = fixed_ms + ms_per_token x tokens, least squares."""
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    a = np.vstack([np.ones_like(x), x]).T
    (fixed, per_token), *_ = np.linalg.lstsq(a, y, rcond=None)
    pred = a @ np.array([fixed, per_token])
    return {
        "fixed_ms": round(float(fixed), 4),
        "ms_per_token": round(float(per_token), 5),
        "tokens_per_s": round(1000.0 / float(per_token), 1) if per_token > 0 else None,
        "max_relative_error": round(float(np.max(np.abs(pred - y) / y)), 4),
        "points": len(points),
    }


def fit_decode(points: list[tuple[int, float, float]]) -> dict:
    """step_ms = base_ms + per_sequence_ms x (running - 1) + per_context_token_ms x context, least squares."""
    running = np.array([p[0] for p in points], dtype=float)
    ctx = np.array([p[1] for p in points], dtype=float)
    y = np.array([p[2] for p in points], dtype=float)
    a = np.vstack([np.ones_like(y), running - 1, ctx]).T
    (base, per_seq, per_ctx), *_ = np.linalg.lstsq(a, y, rcond=None)
    pred = a @ np.array([base, per_seq, per_ctx])
    alone = sorted({p[1] for p in points if p[0] == 1})
    return {
        "base_ms": round(float(base), 4),
        "per_sequence_ms": round(float(per_seq), 4),
        "per_context_token_ms": round(float(per_ctx), 7),
        "max_relative_error": round(float(np.max(np.abs(pred - y) / y)), 4),
        "points": len(points),
        # the measured one-sequence step (median) at each context: what the fit's straight line
        # over 1..slots sequences and long contexts can miss at a short one (efficiency reads it)
        "one_sequence": [
            [c, round(float(np.median([p[2] for p in points if p[0] == 1 and p[1] == c])), 4)] for c in alone
        ],
    }


def efficiency(
    llm: LlmStage, prefill: dict, decode: dict, weight_bytes: float | None, per_req: dict | None = None
) -> dict | None:
    """The measured fits as the spec's `llm.efficiency` figures for this accelerator.

    Expressed against what the capacity model itself computes (archkit.perf.llm.model), so that
    it reproduces the measured steps: prefill_mfu = 2 x parameters FLOPs per token / (measured
    seconds per token x peak FLOPS); decode_bandwidth = the model's weight bytes / ((the measured
    step at the workload's mean context - overhead) x peak bandwidth), the overhead being the
    measured per-step cost that does not scale with weights (the prefill fit's fixed part: one
    llama_decode call's scheduling, sampling and launch work). The step is taken at the mean
    context (prompt + output / 2) because the engine's measured cost per context token (llama.cpp
    on a CPU: ~9 us) is several times the roofline's KV read, and the mean context is where the
    load test's tokens are decoded; the step there is interpolated between the measured
    one-sequence medians when the mean context lies between them (the fit's straight line is not
    straight on a CPU: 7.5 ms at context 56, 13.8 at 280, 16.0 at 664), else the fit's; and where
    the per-request probe measured the step as the workload arrives (`per_req["step"]`: after idle
    gaps, 10.8 ms where back to back it was 8.0), that step, moved to the mean context along the
    fit's slope. `weight_bytes` (the served file's size) is recorded beside.
    The per-request costs (`per_request`) are carried as they were measured.
    """
    from archkit.perf.llm.model import replica

    dev = llm.accelerator.resolve(None)
    if dev is None:
        return None
    arch = llm.model.architecture()
    weights = replica(llm, dev).weight_bytes
    per_token_s = prefill["ms_per_token"] / 1000.0
    mfu = 2 * arch.parameters / (per_token_s * dev.bf16_tflops * 1e12) if per_token_s > 0 else None
    wl = llm.workload
    ctx = float(wl.prompt_tokens.mean_tokens or 0) + float(wl.output_tokens.mean_tokens or 0) / 2
    slope = max(decode.get("per_context_token_ms", 0.0), 0.0)
    step_ms = decode["base_ms"] + slope * ctx
    alone = decode.get("one_sequence") or []
    if len(alone) >= 2 and alone[0][0] <= ctx <= alone[-1][0]:  # between measured contexts: theirs
        step_ms = float(np.interp(ctx, [c for c, _ in alone], [ms for _, ms in alone]))
    if per_req and per_req.get("step"):  # measured as the workload arrives: that one, moved to ctx
        at_ms, at_ctx = per_req["step"]
        step_ms = float(at_ms) + slope * (ctx - float(at_ctx))
    # at most what leaves the weights' streaming at peak bandwidth inside the measured step: a larger
    # overhead (a noisy prefill intercept) would clip the bandwidth share at 1 and the step come out long
    floor_ms = weights / (dev.bandwidth_gb_s * 1e9) * 1000
    overhead = max(min(prefill["fixed_ms"], decode["base_ms"] * 0.5, step_ms - floor_ms), 0.0)
    streaming_s = (step_ms - overhead) / 1000.0
    bw = weights / (streaming_s * dev.bandwidth_gb_s * 1e9) if streaming_s > 0 else None
    mfu_r = round(min(mfu, 1.0), 4) if mfu else None
    bw_r = round(min(bw, 1.0), 4) if bw else None
    return {
        "accelerator": dev.name,
        "weight_bytes": int(weights),
        "file_bytes": int(weight_bytes) if weight_bytes else None,
        "decode_context_tokens": round(ctx, 1),
        "prefill_mfu": mfu_r,
        "decode_bandwidth": bw_r,
        "step_overhead_ms": round(overhead, 3),
        "request_overhead_ms": per_req["request_overhead_ms"] if per_req else None,
        "client_overhead_ms": per_req["client_overhead_ms"] if per_req else None,
        "sequence_overhead_ms": sequence_overhead(llm, decode, mfu_r, bw_r, overhead, ctx),
    }


def sequence_overhead(
    llm: LlmStage, decode: dict, mfu: float | None, bw: float | None, overhead_ms: float, ctx: float
) -> float | None:
    """The measured cost of a further running sequence (the decode fit's `per_sequence_ms`) less what
    the roofline with these efficiencies already gives it (its two-sequence step less its
    one-sequence step at the mean context): the engine's per-sequence work beyond the roofline.

    llama.cpp on one CPU thread: 14.2 ms for the second sequence, of which the roofline, memory-bound
    at one sequence and compute-bound at two, carries 1.2 ms; a request that arrived while the other
    slot decoded took 27-30 ms of prompt time where the model without it said ~9 (docs/benchmarks.md,
    LLM). None without a measured per-sequence cost or efficiencies; at least 0."""
    from dataclasses import replace

    from archkit.perf.llm.model import replica

    dev = llm.accelerator.resolve(None)
    if dev is None or mfu is None or bw is None or "per_sequence_ms" not in decode:
        return None
    rep = replace(
        replica(llm, dev), prefill_mfu=mfu, decode_bandwidth=bw, step_overhead_s=overhead_ms / 1000,
        sequence_overhead_s=0.0,
    )  # fmt: skip
    roofline_ms = (rep.decode_step_s(2, int(ctx)) - rep.decode_step_s(1, int(ctx))) * 1000
    return round(max(float(decode["per_sequence_ms"]) - roofline_ms, 0.0), 3)


def _stages(spec: Spec) -> list[tuple[str, LlmStage]]:
    return [(st.id, st.llm) for st in spec.dataflow.stages if st.llm is not None]


def calibrate_llm(spec: Spec, opts: LlmOptions, progress: Callable[[str], None] | None = None) -> dict:
    """Probe the engine at `opts.url` for the spec's LLM stage; returns the calibration document."""
    say = progress or (lambda _m: None)
    stages = _stages(spec)
    if not stages:
        raise CalibrationError("the spec has no llm stage (dataflow.stages[].llm)")
    stage_id, llm = stages[0]
    if llm.engine.name is not LlmEngineName.llamacpp:
        raise CalibrationError(
            f"stage {stage_id}: engine {llm.engine.name.value} is not probed yet (llama.cpp is); its KV "
            "capacity can be read from its metrics (kv_capacity_vllm)"
        )
    end = time.monotonic() + opts.budget_s
    eng = LlamaCpp(opts.url, opts.timeout_s)
    props, slots = eng.get(eng.ep.model_config or ""), eng.get(eng.ep.extra["slots"])
    kv = kv_capacity_llamacpp(props, slots)
    n_slots, per_slot = kv["slots"], kv["tokens_per_slot"] or 0
    say(f"{stage_id}: {n_slots} slots x {per_slot} tokens of KV cache")
    eng.complete(eng.tokens(16), 4, opts.seed)  # warm-up: first-call allocations
    prefill_pts: list[tuple[int, float]] = []
    for n in (t for t in opts.prefill_tokens if t + 2 <= per_slot):
        prompt = eng.tokens(n)
        for r in range(opts.repeats):
            t = eng.complete(prompt, 1, opts.seed + r)
            prefill_pts.append((int(t["prompt_n"]), float(t["prompt_ms"])))
        say(f"prefill {n} tokens: {np.median([p[1] for p in prefill_pts[-opts.repeats :]]):.1f} ms")
        if time.monotonic() > end:
            raise CalibrationError(f"out of time (--budget-s {opts.budget_s:g}) during the prefill sweep")
    if len(prefill_pts) < 2:
        raise CalibrationError(f"slots of {per_slot} tokens leave no room for the prefill sweep")
    decode_pts: list[tuple[int, float, float]] = []
    short = eng.tokens(opts.context_tokens[0])
    for c in range(1, n_slots + 1):
        for r in range(opts.repeats):
            results: list[dict] = []
            errors: list[BaseException] = []

            def one(
                i: int, r: int = r, results: list[dict] = results, errors: list[BaseException] = errors
            ) -> None:
                try:
                    results.append(eng.complete(short, opts.decode_tokens, opts.seed + 100 * r + i))
                except BaseException as exc:  # noqa: BLE001 - reported below, from the main thread
                    errors.append(exc)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(c)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            if errors:
                raise errors[0]
            for t in results:
                decode_pts.append(
                    (c, len(short) + opts.decode_tokens / 2, float(t["predicted_per_token_ms"]))
                )
        say(
            f"decode with {c} running: {np.median([p[2] for p in decode_pts[-c * opts.repeats :]]):.2f} ms/step"
        )
        if time.monotonic() > end:
            raise CalibrationError(f"out of time (--budget-s {opts.budget_s:g}) during the decode sweep")
    for n in opts.context_tokens[1:]:
        if n + opts.decode_tokens > per_slot:
            continue
        prompt = eng.tokens(n)
        for r in range(opts.repeats):
            t = eng.complete(prompt, opts.decode_tokens, opts.seed + r)
            decode_pts.append((1, n + opts.decode_tokens / 2, float(t["predicted_per_token_ms"])))
        say(f"decode at context {n}: {np.median([p[2] for p in decode_pts[-opts.repeats :]]):.2f} ms/step")
    prefill, decode = fit_prefill(prefill_pts), fit_decode(decode_pts)
    # each answer as long as the workload's mean: the next request's set-up trims it from the slot
    answer = int(llm.workload.output_tokens.mean_tokens or opts.decode_tokens)
    eng.chat_stream(FILLER.strip(), answer, opts.seed)  # fills the slot's cache
    left = end - time.monotonic() - 5.0
    gaps = arrival_gaps(llm, opts.request_repeats, min(opts.arrivals_budget_s, max(left, 1.0)), opts.seed)
    say(f"per request: {len(gaps)} requests after idle gaps of {np.mean(gaps):.2f} s on average")
    streamed = []
    for gap in gaps:
        time.sleep(gap)
        streamed.append(eng.chat_stream(FILLER.strip(), answer, opts.seed))
    step = arrivals_step(streamed)
    if step is None:  # an engine without decode timings: the back-to-back one-sequence step
        alone = [p for p in decode_pts if p[0] == 1 and p[1] == decode_pts[0][1]]
        step = (float(np.median([p[2] for p in alone])), alone[0][1]) if alone else None
    per_req = per_request(streamed, prefill, decode, step)
    per_req["gaps_s"] = gaps
    say(
        f"per request: decode step {step[0] if step else float('nan'):.2f} ms, "
        f"{per_req['request_overhead_ms']:.2f} ms in the engine, "
        f"{per_req['client_overhead_ms']:.2f} ms outside it"
    )
    try:
        meta = eng.get(eng.ep.models or "")["data"][0]["meta"]
        weight_bytes = float(meta["size"])
    except (CalibrationError, KeyError, IndexError, TypeError, ValueError):
        weight_bytes = None
    return {
        "apiVersion": "archkit/v1",
        "kind": KIND,
        "spec": spec.metadata.name,
        "env": opts.env,
        "engine_url": opts.url,
        "environment": environment(),
        "fingerprint": fingerprint(
            None, {"llama.cpp": str(props.get("build_info") or llm.engine.version or "?")}
        ),
        "method": (
            f"server-side timings of llama-server: prefill of {list(opts.prefill_tokens)} tokens x {opts.repeats}; "
            f"{opts.decode_tokens} output tokens with 1..{n_slots} running sequences and at contexts "
            f"{list(opts.context_tokens)}; prompt cache off, greedy; per request: one chat prompt "
            f"streamed {opts.request_repeats} times with {answer}-token answers after idle gaps drawn "
            "from the workload's arrivals, the prompt cache on (a first request fills it)"
        ),
        "models": {},
        "llm": {
            stage_id: {
                "engine": llm.engine.name.value,
                "kv_capacity": kv,
                "prefill": prefill,
                "decode": decode,
                "per_request": per_req,
                "samples": {
                    "prefill": [[n, round(ms, 3)] for n, ms in prefill_pts],
                    "decode": [[c, ctx, round(ms, 4)] for c, ctx, ms in decode_pts],
                },
                "efficiency": efficiency(llm, prefill, decode, weight_bytes, per_req),
            }
        },
    }
