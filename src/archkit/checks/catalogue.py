"""The rule catalogue as Markdown (docs/checks.md), generated from the registry.

Regenerate with: .venv/bin/python -m archkit.checks.catalogue docs/checks.md
"""

from __future__ import annotations

import sys
import textwrap

from archkit.checks.registry import FAMILIES, all_rules, family_of

MODELS = """\
## How archkit predicts latency

The capacity rules (AK2xx) and `archkit capacity SPEC` share one analysis
(`archkit.perf`), computed once per check run:

- **Arrival rate.** A stage sees the design rate `budgets.throughput_rps` (the peak rate
  where a rule says so) times its share of the requests — the sum over its inbound edges of
  the source's share × the edge's `weight` (a cache miss ratio, a fallback share), capped
  at 1 — times its `items_per_request`. Unweighted edges pass everything (conservative;
  AK214 notes a conditional edge without a weight). A stage that a cache's hit `skips` runs
  only on a miss: its share is lowered by the cache's `hit_ratio` (seed 004 §3.3), and the
  simulation routes a hit past it.
- **Shared processors.** Every stage runs on its service's cores or GPUs (a model on a GPU
  uses copy + compute of each batch; a non-model stage uses cores only when it declares
  `cpu_ms`); an environment's `cpu_cores` puts every service on one machine. Demand per
  request on each resource is Σ share × items × time per item (at the batch formed under
  load); the pipeline's ceiling (the knee) is the lowest of units / demand over resources,
  servers / demand over stages and, over `connection_pools`, size × client replicas /
  (calls per request × hold time) (Little's law), and that resource, stage or pool is the
  bottleneck. Jobs on one resource share it (processor sharing: n jobs on c units run at
  min(1, c/n) each), so
  instances that share a GPU or a replica's cores count as that many servers (AK204,
  AK206), and a resource several stages share is checked by AK213.
- **Latency composition (data flow).** Paths follow *sync* edges from stages without any
  inbound edge; async hand-offs are off the request path. Per path: the sum of stage P50s,
  the sum of stage P99s (a conservative bound: every stage at its P99 on one request) and
  the independent-stages estimate P50 sum + sqrt(Σ(P99ᵢ − P50ᵢ)²). The critical path is
  the one with the largest P99 sum; the stage with the largest P99 on it "eats the budget".
- **Latency composition (control flow).** Paths from `start` to each terminal; a call
  costs its target stage's P99 nominally and (1 + attempts) × timeout + backoffs at worst.
- **Queueing models.** CPU stages with `concurrency` workers: M/M/c (Erlang C).
  Batched model stages: deterministic service per batch size (seed 000 §2.1); M/D/1 is
  exact (Pollaczek–Khinchine, W = ρS / 2(1 − ρ)); M/D/c uses Cosmetatos' approximation
  (INFOR 13(3), 1975), ½·W(M/M/c)·[1 + (1 − ρ)(c − 1)(√(4 + 5c) − 2)/(16ρc)], within 3 % of
  the exact chain for c = 1..8, ρ = 0.3..0.9, with an exponential tail of the same mean.
  The queue follows the service's `routing`: `random` (a Kubernetes Service; the default)
  makes each replica its own queue at λ/R, the same split the batch fill uses;
  `round-robin` scales that wait by 1/R; `least-request` pools all instances into one queue.
- **Dynamic batching.** Each replica's batcher collects up to the target batch b (the
  largest `preferred_batch_sizes`, else `max_batch_size`) or until the first request has
  waited `max_queue_delay_us`; requests queueing for a busy instance join the forming batch
  (a fixed point). Service time per batch comes from `model.service_time`
  (copy + compute + overhead), **linearly interpolated** between measured batch sizes and
  extrapolated beyond the largest (AK212 warns). Mean latency = mean fill wait + mean
  queueing + service of the mean batch. **Analytic P99** = the fill-time bound (the first
  request's 99th-percentile wait, never above the queue delay) + P99 queueing + service
  of the 99th-percentile batch: a sum of component P99s, conservative when batches form
  (the fill wait and the wait for an instance overlap in reality).
- **Simulation.** `archkit.perf.simulate` runs the same assumptions as a discrete-event
  simulation of the batcher (10,000 Poisson arrivals, fixed seed, so output is
  byte-stable; one replica's batcher at its share of the rate, or all instances for
  least-request routing): it
  reproduces Pollaczek–Khinchine for M/D/1 within 1–2 % and shows how much room the
  analytic estimate leaves (often 2–3× for batched stages; for lightly loaded batchers
  with short delays it can be slightly higher, as pooling fills batches faster). AK203
  reports an error only when the simulated P99 misses the budget too (a warning, "tight",
  when only the analytic estimate does), and every recommendation
  is confirmed by simulation — for unbatched stages the M/D/c tail approximation can be a
  few per cent optimistic. The whole pipeline has its own simulation
  (`archkit.perf.pipesim`: routes by edge weight, log-normal worker times, Triton's
  batcher, processor sharing, routing, call timeouts and retries); `archkit capacity`
  prints its end-to-end P50/P95/P99 at the design rate.
- **Recommendation.** Over batch sizes (1, measured, preferred, powers of two ≤ max) ×
  queue delays (0 … 100 ms) × replicas (instances per replica as declared), the fewest
  replicas and then the lowest P99 that meets the binding budget (the tighter of the
  stage's P99 and the end-to-end P99 less the P99s of the other stages on its heaviest
  path), analytically and in simulation, at the service's routing (named in the answer).
  If one item's service time already exceeds the budget, archkit says that no
  configuration can meet it; when the answer needs more GPUs than the node pool holds, it
  says the pool must grow.
- **Retries.** A call's worst case must fit its caller's timeout (`caller`) or the
  request deadline; nested retries multiply (Π(1 + attempts)).
"""


def markdown() -> str:
    """docs/checks.md: an index of every rule, the analysis models, then one section per rule."""
    rules = all_rules()
    out = [
        "# archkit check: the rule catalogue",
        "",
        "<!-- Generated by archkit from the rule registry: "
        ".venv/bin/python -m archkit.checks.catalogue docs/checks.md -->",
        "",
        f"{len(rules)} rules. `archkit explain CODE` prints one of them; every rule has a YAML "
        "fixture with passing and failing cases in `tests/checks/fixtures/`. Seeds: "
        "seed 000 (AI application architecture, illustrated) and seed 004 (scenario-flow-driven AI "
        "system architecture): [sources.md](sources.md) says what each cited section establishes.",
        "",
    ]
    for prefix, fam in FAMILIES.items():
        members = [r for c, r in rules.items() if c.startswith(prefix)]
        if not members:
            continue
        out += [f"## {prefix}xx — {fam}", "", "| code | name | severity | summary |", "|---|---|---|---|"]
        for r in members:
            out.append(
                f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.severity.value} | {_cell(r.summary())} |"
            )
        out.append("")
    others = [r for c, r in rules.items() if c[:3] not in FAMILIES]
    if others:
        out += ["## Other rules", "", "| code | name | severity | summary |", "|---|---|---|---|"]
        out += [
            f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.severity.value} | {_cell(r.summary())} |"
            for r in others
        ]
        out.append("")
    out += [MODELS, "## Rules", ""]
    for code, r in rules.items():
        out += [
            f"### {code}",
            "",
            f"**{r.name}** — {r.severity.value}, {family_of(code)}",
            "",
            r.summary(),
            "",
        ]
        if r.rationale:
            out += [textwrap.dedent(r.rationale).strip(), ""]
        if r.Settings.model_fields:
            out += [f"Settings (`checks: {{settings: {{{code}: {{...}}}}}}`):", ""]
            out += [
                f"- `{name}` = `{f.default!r}`" + (f": {f.description}" if f.description else "")
                for name, f in r.Settings.model_fields.items()
            ]
            out.append("")
        if r.source:
            out += [f"Source: {r.source}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str]) -> int:
    text = markdown()
    if len(argv) > 1:
        with open(argv[1], "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":  # pragma: no cover - a maintenance entry point
    raise SystemExit(main(sys.argv))
