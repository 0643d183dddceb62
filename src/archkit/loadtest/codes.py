"""Load-test verdict codes: one per kind of budget the judge holds a run to (`archkit explain LT101`).

The judge names each verdict by what it measured (`end_to_end.p99_ms`, `stage.detect.p95_ms`,
`chaos.0.fallback`); `code_of` maps such an id to its code, so reports and `archkit explain`
speak of the same thing. Verdict codes have the LT prefix: LT1xx budgets of a steady run,
LT2xx stress, LT3xx chaos.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictCode:
    """One kind of load-test verdict: the ids it covers, what it means, where it comes from."""

    id: str
    title: str
    pattern: str  # regular expression over verdict ids
    rationale: str
    source: str

    def explain(self) -> str:
        return f"{self.id} {self.title} (load test)\n\n{self.rationale}\n\nSource: {self.source}\n"


CODES: tuple[VerdictCode, ...] = (
    VerdictCode(
        "LT101",
        "end-to-end latency budget",
        r"end_to_end\.p(50|95|99)_ms",
        "The P50/P95/P99 of every request, from HDR histograms exact to 0.1 %, must stay within "
        "budgets.p50_ms/p95_ms/p99_ms. A chaos run's percentiles include the injected faults, so "
        "they are judged at baseline only.",
        "seed 000 §4.4: a spec is signed only after the load-test levels pass",
    ),
    VerdictCode(
        "LT102",
        "end-to-end error rate",
        r"end_to_end\.error_rate",
        "The fraction of failed requests must stay within budgets.error_rate.",
        "seed 000 §4.4",
    ),
    VerdictCode(
        "LT103",
        "design throughput sustained",
        r"end_to_end\.throughput_rps",
        "The achieved rate must reach budgets.throughput_rps (5 % below still counts: pacing "
        "jitter); judged only when the offered rate reached the budget.",
        "seed 000 §4.4",
    ),
    VerdictCode(
        "LT110",
        "scenario latency budget",
        r"scenario\.[^.]+\.p(50|95|99)_ms",
        "Each scenario's requests within loadtest.scenarios[].p50_ms/p95_ms/p99_ms.",
        "seed 000 §4.4",
    ),
    VerdictCode(
        "LT120",
        "stage latency budget",
        r"stage\.[^.]+\.p(50|95|99)_ms",
        "Each stage's server-side histogram (bucket-interpolated like PromQL's "
        "histogram_quantile) within dataflow.stages[].p50_ms/p95_ms/p99_ms.",
        "seed 000 §2.1: measure each part of the latency separately before attributing it",
    ),
    VerdictCode(
        "LT130",
        "LLM token budget",
        r"llm\.[^.]+\.[a-z0-9_]+",
        "A streamed run of an llm stage within its llm.budgets: TTFT (to the first non-empty token), "
        "ITL (every gap, per token), TPOT (P99 over requests), end to end, output tokens/s sustained; "
        "from the client's per-chunk timing, exact to 0.1 %; a percentile judged on its 95 % interval "
        "like LT101 (inconclusive when the interval straddles the budget or the samples are too few).",
        "DESIGN.md, LLM serving: users judge an LLM by TTFT, ITL and TPOT, not one latency",
    ),
    VerdictCode(
        "LT201",
        "stress knee",
        r"stress\.knee_rps",
        "The knee (the highest throughput whose step met the P99 and error budgets) must reach "
        "budgets.peak_throughput_rps (else throughput_rps).",
        "seed 000 §4.4: the stress level finds where the service stops meeting its budget",
    ),
    VerdictCode(
        "LT301",
        "chaos fault applied",
        r"chaos\.\d+\.applied",
        "Each declared fault was actually injected; a fault that was not proves nothing.",
        "seed 000 §4.4: the chaos level",
    ),
    VerdictCode(
        "LT302",
        "chaos fallback answered",
        r"chaos\.\d+\.fallback",
        "While a fault is on, the control-flow node named by expect_fallback answers.",
        "seed 000 §4.4: the chaos level",
    ),
    VerdictCode(
        "LT303",
        "chaos recovery",
        r"chaos\.\d+\.recovered",
        "After a fault ends, the service recovers before the run does.",
        "seed 000 §4.4: the chaos level",
    ),
)


def code_of(verdict_id: str) -> str | None:
    """The code of a verdict id (`end_to_end.p99_ms` -> LT101), or None for an unknown id."""
    for c in CODES:
        if re.fullmatch(c.pattern, verdict_id):
            return c.id
    return None
