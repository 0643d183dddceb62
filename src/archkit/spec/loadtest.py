"""The load-test section: targets, payloads, scenarios, faults, stress searches and levels."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from archkit.spec.base import MAX_LEVEL_SECONDS, MAX_RPS, MAX_SECONDS, Id, Ms, Node, PositiveInt, Seconds
from archkit.spec.refs import IdOf, RefTo

__all__ = ["Fault", "Level", "Loadtest", "Payload", "Scenario", "StressSearch", "Target", "TritonInput"]


class Target(Node):
    protocol: (
        Literal["http", "triton-http", "triton-grpc", "openai-stream"]
        | Annotated[str, Field(pattern=r"^x-[a-z0-9][a-z0-9-]*$")]
    ) = Field(
        "http",
        description="openai-stream: OpenAI-compatible completions streamed as server-sent events; "
        "x-NAME: a plug-in load protocol (entry point group archkit.load_protocols)",
    )
    host: str = Field(description="base URL; load tests only ever target loopback addresses")
    service: Annotated[Id, RefTo("service")] | None = None


class Payload(Node):
    file: str | None = None
    folder: str | None = None
    glob: str = "*"
    template: str | None = None
    content_type: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Payload:
        given = [k for k in ("file", "folder", "template") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"payload takes one of file, folder or template, not {', '.join(given)}")
        return self


class TritonInput(Node):
    name: str
    datatype: str = "BYTES"
    shape: list[Annotated[int, Field(ge=-1, le=2**31 - 1)]] = Field(
        default_factory=list, max_length=16, description="dimensions; -1 is variable"
    )


class Scenario(Node):
    """One kind of request in the traffic mix."""

    id: Annotated[Id, IdOf("load-test scenario")]
    weight: Annotated[float, Field(gt=0, le=1_000_000)] = 1
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH"] = "POST"
    path: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    payload: Payload | None = None
    model: str | None = Field(None, description="Triton model name for triton targets")
    inputs: list[TritonInput] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    expect_status: list[Annotated[int, Field(ge=100, le=599)]] = Field(
        default_factory=lambda: [200], description="HTTP status codes (RFC 9110: 100 to 599)"
    )
    llm_stage: Annotated[Id, RefTo("stage")] | None = Field(
        None,
        description="openai-stream: the llm stage whose workload (prompt and output lengths, shared "
        "prefixes) makes each request's body, and whose token budgets the run is judged by",
    )
    p50_ms: Ms | None = None
    p95_ms: Ms | None = None
    p99_ms: Ms | None = None


class Fault(Node):
    """One injected fault. loss and stress run in a cluster only (render's Chaos Mesh experiments)."""

    at_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)]
    action: Literal["stop", "kill", "restart", "pause", "delay", "loss", "stress"]
    target: Annotated[Id, RefTo("service")] = Field(description="a topology service id")
    duration_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None = None
    delay_ms: Ms | None = None
    loss_percent: Annotated[float, Field(gt=0, le=100)] | None = Field(
        None, description="loss: share of the target's outgoing packets dropped, in percent"
    )
    stress_cpu_workers: Annotated[int, Field(ge=1, le=1024)] | None = Field(
        None, description="stress: CPU-burning workers in the target's containers"
    )
    stress_memory_mib: Annotated[float, Field(gt=0, le=1_048_576)] | None = Field(
        None, description="stress: memory each stress worker holds, in MiB"
    )
    command: str | None = Field(None, description="how to apply it outside the local runner")
    expect_fallback: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="control-flow node expected to answer"
    )

    @model_validator(mode="after")
    def _amounts(self) -> Fault:
        if self.action == "loss" and self.loss_percent is None:
            raise ValueError("a loss fault needs loss_percent")
        if self.action == "stress" and self.stress_cpu_workers is None and self.stress_memory_mib is None:
            raise ValueError("a stress fault needs stress_cpu_workers or stress_memory_mib")
        return self


class StressSearch(Node):
    """A stress level that searches for the knee: rates start × factor^i until the stop criterion breaks."""

    # perf_analyzer's search (--request-rate-range with --latency-threshold): step the offered
    # rate up until the latency or the error share crosses its limit; a geometric step reaches
    # a knee ten times higher in a few more steps than a linear one.
    start_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = Field(
        None,
        description="the first rate tried; omitted: the search brackets the predicted knee of the llm stage "
        "the scenarios stream to (archkit capacity's), from factor² below it to factor² above it",
    )
    factor: Annotated[float, Field(gt=1, le=10)] = Field(
        1.5, description="each step offers this many times the last"
    )
    max_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = Field(
        None,
        description="the highest rate tried (default: start × factor^9, or the predicted knee × factor²)",
    )
    stop_percentile: Literal[
        "p50_ms", "p95_ms", "p99_ms", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_ms"
    ] = Field(
        "p99_ms",
        description="the latency percentile whose limit ends the search: end to end, or a token percentile "
        "of the streamed llm stage (tpot_ms: its P99 over requests); each step lasts long enough to "
        "measure it (6, 72 or 368 samples at the step's rate, an ITL sample per output token after the "
        "first, at least step_duration_s)",
    )
    stop_latency_ms: Ms | None = Field(
        None,
        description="its limit (default: the same budget in budgets, or in the streamed llm stage's llm.budgets)",
    )
    stop_error_rate: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="the error share that ends the search (default: budgets.error_rate, else 1 %)"
    )


class Level(Node):
    """One load-test level: baseline, stress or chaos."""

    id: Annotated[Id, IdOf("load-test level")]
    kind: Literal["baseline", "stress", "chaos"]
    users: Annotated[int, Field(ge=1, le=100_000)] = Field(
        10, description="simulated users, at most 100,000 (locust runs a few thousand per core)"
    )
    rate_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    duration_s: Annotated[
        float,
        Field(
            gt=0, le=MAX_LEVEL_SECONDS, description="seconds, at most a week (604,800): a 72-hour soak fits"
        ),
    ] = 60
    max_requests: Annotated[int, Field(ge=1, le=10**9)] | None = None
    start_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    step_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    step_duration_s: Seconds | None = None
    max_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    arrival: Literal["constant", "poisson", "closed"] | None = Field(
        None,
        description="open model (constant or poisson arrivals at the offered rate, the default for "
        "baseline and stress) or closed (users wait for each answer; the default for chaos)",
    )
    max_inflight: PositiveInt | None = Field(
        None,
        description="open model: requests in flight at most (default: users); beyond it a request is dropped",
    )
    faults: list[Fault] = Field(default_factory=list)
    search: StressSearch | None = Field(
        None, description="stress: search for the knee instead of the linear start_rps/step_rps schedule"
    )


class Loadtest(Node):
    target: Target
    scenarios: list[Scenario] = Field(default_factory=list)
    levels: list[Level] = Field(default_factory=list)

    @model_validator(mode="after")
    def _search_start(self) -> Loadtest:
        # a search without start_rps starts from an llm stage's predicted knee: a scenario must stream to one
        if not any(sc.llm_stage for sc in self.scenarios):
            for lv in self.levels:
                if lv.search is not None and lv.search.start_rps is None:
                    raise ValueError(
                        f"level {lv.id!r}: a search without start_rps starts from the predicted knee of the "
                        "llm stage a scenario streams to (llm_stage); no scenario names one"
                    )
        return self
