"""LLM request bodies drawn from the spec's workload: prompt and output lengths, shared prefixes.

The generated locustfile carries an llm scenario's workload as a literal (archkit.plans.loadtest
`LlmLoad`); each request draws a prompt length, an output length and (with shared prefixes) a
prefix group, and sends an OpenAI-compatible body with `max_tokens` = the output length and
`ignore_eos` (llama.cpp, vLLM) so the server generates exactly that many tokens. No tokenizer
runs here: a prompt of n tokens is n repetitions of a one-token word (" a"); the server's
`usage.prompt_tokens` says what it really counted (its chat template adds a few).
Lengths come from the one sampler the offline simulation uses (`archkit.llm_lengths`, numpy
only: no pydantic in the locust process), drawn from the caller's seeded numpy generator.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from archkit import llm_lengths

WORD = " a"  # one token in the BPE vocabularies of GPT-2-style tokenizers (SmolLM2, Llama 3)


@dataclass(frozen=True)
class Lengths:
    """One token-length distribution (spec `TokenLengths`)."""

    distribution: str
    min_tokens: int
    mean_tokens: float | None = None
    std_tokens: float | None = None
    max_tokens: int | None = None
    cdf: tuple[tuple[float, float], ...] = ()

    @classmethod
    def of(cls, d: Mapping[str, Any], root: str | None = None) -> Lengths:
        cdf = tuple((float(a), float(b)) for a, b in d.get("cdf") or ())
        if not cdf and d.get("cdf_file"):
            path = os.path.join(root or os.environ.get("ARCHKIT_PAYLOAD_ROOT") or os.getcwd(), d["cdf_file"])
            with open(path, encoding="utf-8") as fh:
                rows = [line.strip().split(",") for line in fh if line.strip()]
            cdf = tuple(
                (float(r[0]), float(r[1])) for r in rows if len(r) >= 2 and r[0].replace(".", "", 1).isdigit()
            )
        return cls(
            distribution=str(d["distribution"]),
            min_tokens=int(d.get("min_tokens", 1)),
            mean_tokens=d.get("mean_tokens"),
            std_tokens=d.get("std_tokens"),
            max_tokens=d.get("max_tokens"),
            cdf=cdf,
        )

    def draw(self, rng: np.random.Generator) -> int:
        """One length, rounded and clipped to [min_tokens, max_tokens] (`llm_lengths.draw`)."""
        return int(llm_lengths.draw(self, 1, rng)[0])


@dataclass(frozen=True)
class LlmLoad:
    """An llm scenario's workload, live: draws one request body at a time."""

    stage: str
    model: str
    prompt: Lengths
    output: Lengths
    prefix_groups: int = 0
    prefix_tokens: int = 0
    prefix_share: float = 0.0
    slo_ttft_ms: float | None = None  # the request's SLO objectives (plans.loadtest.LlmLoad.slo)
    slo_tpot_ms: float | None = None

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> LlmLoad:
        prefix = d.get("prefix") or {}
        slo = d.get("slo") or {}
        return cls(
            stage=str(d["stage"]),
            model=str(d["model"]),
            prompt=Lengths.of(d["prompt"]),
            output=Lengths.of(d["output"]),
            prefix_groups=int(prefix.get("groups", 0)),
            prefix_tokens=int(prefix.get("tokens", 0)),
            prefix_share=float(prefix.get("share", 0.0)),
            slo_ttft_ms=slo.get("ttft_ms"),
            slo_tpot_ms=slo.get("tpot_ms"),
        )

    def prompt_text(self, rng: np.random.Generator) -> str:
        """A prompt of the drawn length; with shared prefixes, a share of them start with one of the groups'."""
        n = self.prompt.draw(rng)
        head = ""
        if self.prefix_groups and rng.random() < self.prefix_share:
            g = int(rng.integers(self.prefix_groups))
            # each group's prefix differs from its first token on, so a prefix cache tells them apart
            head = f"{g}:" + WORD * max(0, self.prefix_tokens - 2)
            n = max(1, n - self.prefix_tokens)
        return head + WORD * n

    def body(
        self, path: str | None, rng: np.random.Generator, base: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One request body: chat messages (or a completions prompt), max_tokens, greedy, ignore_eos."""
        out: dict[str, Any] = {"model": self.model, **(base or {})}
        text = self.prompt_text(rng)
        if (
            path
            and path.rstrip("/").endswith("/completions")
            and not path.rstrip("/").endswith("/chat/completions")
        ):
            out["prompt"] = text
        else:
            out["messages"] = [{"role": "user", "content": text}]
        out["max_tokens"] = self.output.draw(rng)
        out.setdefault("temperature", 0)
        out.setdefault("ignore_eos", True)
        return out
