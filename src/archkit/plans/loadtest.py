"""The load-test plan: the spec's traffic mix and its levels (with the stress schedule) as typed values.

Rendered by `archkit.generators.gen_locust` (the locustfile) and meant for every other
driver of the same traffic (a k6 script, the runner's summary): one definition of which
scenario is sent how often with which payload, and which rate each level offers when.
The stress schedule itself is `archkit.plans.stress.stress_steps` (shared with the
load-test runner, which also applies the command line's overrides).
"""

from __future__ import annotations

from dataclasses import dataclass

from archkit.plans.stress import search_basis, stress_steps
from archkit.spec.llm import TokenLengths
from archkit.spec.model import Level, Scenario, Spec, TritonInput


@dataclass(frozen=True)
class LlmLoad:
    """An LLM scenario's workload as the load generator draws it: lengths, shared prefixes, model name.

    `literal` is the Python literal the generated locustfile carries (archkit.loadtest.runtime.llm
    reads it back): plain numbers and strings only, so the file stays readable and byte-stable.
    """

    stage: str
    model: str
    prompt: tuple[tuple[str, object], ...]
    output: tuple[tuple[str, object], ...]
    prefix: tuple[tuple[str, object], ...] | None
    # a request's TTFT and TPOT objectives (ms) for SLO attainment, docs/llm.md: slo_ttft_ms else
    # ttft_p99_ms, slo_tpot_ms else tpot_ms; () when the stage declares neither
    slo: tuple[tuple[str, float], ...] = ()

    @property
    def literal(self) -> str:
        d = {
            "stage": self.stage,
            "model": self.model,
            "prompt": dict(self.prompt),
            "output": dict(self.output),
            "prefix": dict(self.prefix) if self.prefix else None,
        }
        if self.slo:
            d["slo"] = dict(self.slo)
        return repr(d)


def _lengths(t: TokenLengths) -> tuple[tuple[str, object], ...]:
    """A length distribution's parameters (an empirical CDF file is read by the generator, from the spec's folder)."""
    d: dict[str, object] = {"distribution": t.distribution, "min_tokens": t.min_tokens}
    for key in ("mean_tokens", "std_tokens", "max_tokens", "cdf_file"):
        value = getattr(t, key)
        if value is not None:
            d[key] = value
    if t.cdf:
        d["cdf"] = [[int(a), float(b)] for a, b in t.cdf]
    return tuple(d.items())


def llm_load(sc: Scenario, spec: Spec) -> LlmLoad | None:
    """The workload of the llm stage a scenario names (`llm_stage`), if it names one that has an llm section."""
    if sc.llm_stage is None:
        return None
    stage = spec.by_id("stage").get(sc.llm_stage)
    llm = getattr(stage, "llm", None)
    if llm is None:
        return None
    wl = llm.workload
    prefix = None
    if wl.shared_prefix is not None:
        sp = wl.shared_prefix
        prefix = (("groups", sp.groups), ("tokens", sp.tokens), ("share", sp.share))
    b = llm.budgets
    objectives = (("ttft_ms", b.slo_ttft_ms or b.ttft_p99_ms), ("tpot_ms", b.slo_tpot_ms or b.tpot_ms))
    return LlmLoad(
        stage=sc.llm_stage,
        model=sc.model or llm.model.name or sc.llm_stage,
        prompt=_lengths(wl.prompt_tokens),
        output=_lengths(wl.output_tokens),
        prefix=prefix,
        slo=tuple((k, float(v)) for k, v in objectives if v is not None),
    )


@dataclass(frozen=True)
class ScenarioPlan:
    """One request kind of the mix: where it goes, how often, with what, and what answer counts."""

    id: str
    weight: float
    method: str
    path: str | None  # None: the Triton model endpoint (scenario `model`)
    headers: tuple[tuple[str, str], ...]
    payload: tuple[tuple[str, str], ...] | None  # (kind, value): file | folder+glob | template, content_type
    expect_status: tuple[int, ...]
    model: str | None
    inputs: tuple[TritonInput, ...]
    outputs: tuple[str, ...]
    llm: LlmLoad | None = None  # openai-stream: the llm stage's workload makes each body


@dataclass(frozen=True)
class LevelPlan:
    """One load level: users, the first offered rate, its duration and (stress) the (start s, rate) steps."""

    id: str
    kind: str
    users: int
    rate_rps: float | None
    duration_s: float
    steps: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class LoadTestPlan:
    """What a load test of this spec sends (`scenarios`) and at which `levels`."""

    protocol: str
    host: str
    timeout_s: float  # a request's client timeout: the spec's end-to-end control-flow timeout
    scenarios: tuple[ScenarioPlan, ...]
    levels: tuple[LevelPlan, ...]

    def level(self, level_id: str) -> LevelPlan | None:
        return next((lv for lv in self.levels if lv.id == level_id), None)


def payload(sc: Scenario) -> tuple[tuple[str, str], ...] | None:
    """A scenario's payload as (kind, value) pairs, in the order the locustfile reads them."""
    p = sc.payload
    if p is None:
        return None
    out: list[tuple[str, str]] = []
    if p.file is not None:
        out.append(("file", p.file))
    elif p.folder is not None:
        out += [("folder", p.folder), ("glob", p.glob)]
    elif p.template is not None:
        out.append(("template", p.template))
    if p.content_type:
        out.append(("content_type", p.content_type))
    return tuple(out) or None


def level_plan(level: Level, spec: Spec) -> LevelPlan:
    """A level with its offered rate: a stress level starts at its first step's rate."""
    design = spec.budgets.throughput_rps
    steps: list[tuple[float, float]] = []
    if level.kind == "stress":
        needs_knee = level.search is not None and level.search.start_rps is None
        steps = stress_steps(level, design, search_basis(spec, level) if needs_knee else None)
    rate = steps[0][1] if steps else (level.rate_rps or design)
    return LevelPlan(level.id, level.kind, level.users, rate, level.duration_s, tuple(steps))


def load_test_plan(spec: Spec) -> LoadTestPlan | None:
    """The load-test plan of a spec, or None when it has no `loadtest` section."""
    lt = spec.loadtest
    if lt is None:
        return None
    scenarios = tuple(
        ScenarioPlan(
            id=sc.id,
            weight=sc.weight,
            method=sc.method,
            path=sc.path,
            headers=tuple(sorted(sc.headers.items())),
            payload=payload(sc),
            expect_status=tuple(sc.expect_status),
            model=sc.model,
            inputs=tuple(sc.inputs),
            outputs=tuple(sc.outputs),
            llm=llm_load(sc, spec),
        )
        for sc in lt.scenarios
    )
    return LoadTestPlan(
        protocol=lt.target.protocol,
        host=lt.target.host,
        timeout_s=(spec.controlflow.timeout_ms or 30000.0) / 1000.0,
        scenarios=scenarios,
        levels=tuple(level_plan(lv, spec) for lv in lt.levels),
    )
