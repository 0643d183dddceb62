"""One load test from start to verdict: plan, faults, metrics, Prometheus, the run, the judge.

The three levels (seed 000 §4.4): baseline at the design rate; stress stepping the offered
rate up until the P99 or error budget breaks (the knee, and how it failed past it); chaos
applying the level's faults and measuring the error burst, recovery and fallback answers.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from archkit.loadtest import chaos as chaos_mod
from archkit.loadtest import compare as compare_mod
from archkit.loadtest import generator as generator_mod
from archkit.loadtest import judge as judge_mod
from archkit.loadtest import judge_llm, scrape
from archkit.loadtest import plan as plan_mod
from archkit.loadtest.options import LoadtestOptions
from archkit.loadtest.payloads import payload_root
from archkit.loadtest.results import located_verdict
from archkit.loadtest.runner import RunData, free_port, run
from archkit.loadtest.safety import require_loopback
from archkit.machine import cpu_model, load_average
from archkit.orderstats import min_samples
from archkit.plans.stress import TOKEN_STOPS, Basis, search_basis, streamed_stage
from archkit.reporting import Located, locate
from archkit.spec.model import Level, Spec

if TYPE_CHECKING:
    from archkit.loadtest.prom import LivePrometheus

FAST_ERROR_STATUSES = {"429", "503"}
STEPS_PAST_KNEE = 2  # stress stops after this many steps broke the budgets


@dataclass
class Result:
    """A finished load test: the plan, what was measured, the verdicts and the context."""

    spec_file: str
    spec_name: str
    env: str | None
    plan: plan_mod.Plan
    data: RunData
    measured: dict
    verdicts: list[judge_mod.Verdict]
    alerts: list[dict] = field(default_factory=list)
    alert_notes: list[str] = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    budgets: dict = field(default_factory=dict)
    located: list[Located] = field(default_factory=list)  # the verdicts, located in the spec

    @property
    def passed(self) -> bool:
        return judge_mod.passed(self.verdicts)

    @property
    def generator_error(self) -> str | None:
        """Why the numbers describe the load generator rather than the service, if they do."""
        gen = self.measured.get("generator") or {}
        return None if gen.get("kept_up", True) else gen.get("message")


def _loc(spec: Spec, path: tuple) -> str:
    where = locate(spec, path)
    return f"{where.file}:{where.line}: {where.path}"


def check_scenario_urls(spec: Spec) -> None:
    """A scenario path that names its own host (an absolute URL) must pass the loopback rule too."""
    for sc in spec.loadtest.scenarios if spec.loadtest else []:
        path = sc.path or ""
        parts = urlsplit(path)
        if parts.scheme or parts.netloc or path.startswith("//"):
            require_loopback(path, f"scenario {sc.id!r} path ({_loc(spec, tuple(sc.spec_path) + ('path',))})")


def environment_info() -> dict:
    """CPU model, cores and versions: what a reader needs to compare two reports."""
    versions = {}
    for pkg in ("archkit", "locust", "hdrhistogram", "gevent", "tritonclient", "matplotlib"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[pkg] = metadata.version(pkg)
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average": load_average(),
        "versions": versions,
    }


def step_met(spec: Spec, row: dict, level: Level | None = None) -> bool:
    """Did one stress step meet the P99 and error budgets (1% errors when none is declared)?

    A level with a `search` names its own stop criterion: a latency percentile and its limit,
    and an error share (each defaulting to the budget of the same name). See `step_failures`.
    """
    return not step_failures(spec, row, level)


def step_failures(spec: Spec, row: dict, level: Level | None = None) -> list[str]:
    """Why one stress step broke the budgets (empty: it met them).

    The stop criterion (the search's percentile, else the P99) and the error share; where the
    scenarios stream to an llm stage, also each token budget of its `llm.budgets` (TTFT, ITL,
    TPOT) that the step measured enough samples to judge (orderstats.min_samples: a P99 from a
    handful of requests is their largest value, noise that would end a search early).
    """
    if not row.get("requests"):
        return ["no request answered"]
    search = level.search if level is not None else None
    stage = streamed_stage(spec)
    llm_budgets = stage.llm.budgets if stage is not None and stage.llm is not None else None
    err_budget = spec.budgets.error_rate if spec.budgets.error_rate is not None else 0.01
    key, limit = "p99_ms", spec.budgets.p99_ms
    if search is not None:
        if search.stop_error_rate is not None:
            err_budget = search.stop_error_rate
        key = search.stop_percentile
        limit = search.stop_latency_ms
        if limit is None:
            limit = getattr(llm_budgets, key, None) if key in TOKEN_STOPS else getattr(spec.budgets, key)
    out: list[str] = []
    if (row.get("error_rate") or 0) > err_budget:
        out.append(f"error share {row.get('error_rate'):g} over {err_budget:g}")
    measures = row.get("measures") or {}
    if limit is not None:
        got = (
            (measures.get(TOKEN_STOPS[key][0]) or {}).get(TOKEN_STOPS[key][1])
            if key in TOKEN_STOPS
            else row.get(key)
        )
        if got is None or got > limit:
            out.append(
                f"{key} {'not measured' if got is None else f'{got:g} ms'} over the limit of {limit:g} ms"
            )
    for name, (measure, stat, q) in TOKEN_STOPS.items():
        budget = getattr(llm_budgets, name, None) if name != key else None
        m = measures.get(measure) or {}
        if budget is None or (m.get("count") or 0) < min_samples(q) or m.get(stat) is None:
            continue  # not declared, or too few samples at this step to judge it
        if m[stat] > budget:
            out.append(f"{name} {m[stat]:g} ms over the llm budget of {budget:g} ms (n={m['count']})")
    return out


def analyse_stress(spec: Spec, phases: list[dict], level: Level | None = None) -> dict:
    """The knee (highest throughput of the steps that met the budgets, in order) and the failure mode.

    `knee_bracket_rps`: the offered rates of the last step that met the budgets and the first that
    did not, between which the knee lies (a search's resolution is its factor).
    """
    knee = None
    knee_offered = None
    broken: list[dict] = []
    first_reasons: list[str] = []
    for row in phases:
        reasons = step_failures(spec, row, level)
        if not reasons:
            if not broken and (knee is None or row["throughput_rps"] > knee):
                knee, knee_offered = row["throughput_rps"], row["offered_rps"]
        else:
            first_reasons = first_reasons or reasons
            broken.append(row)
    broke = broken[-1] if broken else None  # the last step run shows the failure most clearly
    out: dict = {"knee_rps": knee, "knee_offered_rps": knee_offered, "steps": len(phases)}
    if broken:
        out["knee_bracket_rps"] = [knee_offered, broken[0]["offered_rps"]]
        out["broke_on"] = first_reasons  # what the first broken step missed
    if broke is None:
        out["failure"] = None
        out["failure_mode"] = "none: every step met the budgets (raise max_rps to find the knee)"
        return out
    out["failure"] = {
        "offered_rps": broke["offered_rps"],
        "throughput_rps": broke["throughput_rps"],
        "p99_ms": broke["p99_ms"],
        "error_rate": broke["error_rate"],
        "statuses": broke["statuses"],
    }
    out["failure_mode"] = failure_mode(spec, broke, phases)
    return out


def failure_mode(spec: Spec, broke: dict, phases: list[dict]) -> str:
    """Fast, bounded errors (load shed with 429/503 while latency holds) or queues piling up."""
    errs = broke.get("errors") or 0
    fast = sum(v for k, v in broke.get("statuses", {}).items() if k in FAST_ERROR_STATUSES)
    p99_budget = spec.budgets.p99_ms
    err_p99 = (broke.get("error_latency") or {}).get("p99_ms")
    offered, got = broke.get("offered_rps") or 0, broke.get("request_rate_rps") or 0
    if errs and fast >= errs / 2 and (p99_budget is None or (err_p99 or 0) <= p99_budget):
        return (
            f"fast, bounded errors: {fast} of {errs} failures were {'/'.join(sorted(FAST_ERROR_STATUSES))} "
            f"answered in P99 {err_p99} ms; the service sheds load instead of queueing"
        )
    if offered and got < 0.9 * offered or (p99_budget and (broke.get("p99_ms") or 0) > p99_budget):
        return (
            f"queues piling up: at {offered:g} req/s offered only {got:g} req/s completed and P99 grew to "
            f"{broke.get('p99_ms')} ms (latency growth, not refusals)"
        )
    return f"errors without back-pressure: error rate {broke.get('error_rate')} at {offered:g} req/s"


def _chaos(
    spec: Spec, plan: plan_mod.Plan, opts: LoadtestOptions, level: Level
) -> tuple[chaos_mod.Injector, dict[str, chaos_mod.DelayProxy]]:
    """A chaos level's fault injector and delay proxies (one in front of the target when a delay
    fault names it), checked before the test starts; `plan.host` then points at the proxy."""
    proxies: dict[str, chaos_mod.DelayProxy] = {}
    services = {r.name: r for r in map(chaos_mod.ProcessRef.parse, opts.services)}
    target_service = spec.loadtest.target.service if spec.loadtest else None
    for text in opts.proxies:
        name, _, ports = text.partition("=")
        listen, _, upstream = ports.partition(":")
        if not (name and listen.isdigit() and upstream.isdigit()):
            raise chaos_mod.ChaosError(f"--proxy expects NAME=LISTEN_PORT:UPSTREAM_PORT, got {text!r}")
        proxies[name] = chaos_mod.DelayProxy(int(upstream), int(listen))
    if (
        target_service is not None
        and any(f.action == "delay" and f.target == target_service for f in level.faults)
        and target_service not in proxies
    ):
        u = urlsplit(plan.host)
        proxy = chaos_mod.DelayProxy(u.port or 80)
        proxies[target_service] = proxy
        plan.host = f"{u.scheme}://127.0.0.1:{proxy.port}{u.path}"
    injector = chaos_mod.Injector(level.faults, services, proxies)
    try:
        injector.preflight()
    except chaos_mod.ChaosError:
        for p in proxies.values():
            p.close()
        raise
    return injector, proxies


def _start_prometheus(
    opts: LoadtestOptions, rule_files: dict[str, str] | None, before: dict[str, list[scrape.Sample]]
) -> tuple[LivePrometheus | None, list[str]]:
    """A Prometheus that evaluates the generated alert rules during the test (`--prometheus`),
    scraping the endpoints that answered; (it or None, notes on why alerts are not evaluated)."""
    live_prom = None
    alert_notes: list[str] = []
    if opts.prometheus and rule_files and before:
        from archkit.loadtest.prom import LivePrometheus, PrometheusError

        live_prom = LivePrometheus(sorted(before), rule_files, free_port())
        try:
            live_prom.start()
        except PrometheusError as exc:
            alert_notes.append(f"Prometheus not started: {exc}")
            live_prom = None
    elif opts.prometheus and not rule_files:
        alert_notes.append("no alert rules to evaluate (the prometheus generator produced none)")
    elif opts.prometheus and not before:
        alert_notes.append("no metrics endpoint answered (observability.scrape): alerts not evaluated")
    return live_prom, alert_notes


def _stop_prometheus(live_prom: LivePrometheus | None, alert_notes: list[str]) -> list[dict]:
    """The alerts that fired during the test, after one more evaluation; rules Prometheus could
    not evaluate go into `alert_notes`."""
    if not live_prom:
        return []
    time.sleep(1.0)  # one more evaluation of what the last second caused
    live_prom.poll()
    alerts: list[dict] = live_prom.results()
    for bad in live_prom.rule_health():
        alert_notes.append(f"rule {bad['rule']} is {bad['health']}: {bad['error']}")
    live_prom.stop()
    return alerts


def _measured(
    spec: Spec,
    plan: plan_mod.Plan,
    opts: LoadtestOptions,
    data: RunData,
    before: dict[str, list[scrape.Sample]],
    after: dict[str, list[scrape.Sample]],
    injector: chaos_mod.Injector | None,
    level: Level,
    target_host: str,
    basis: Basis | None = None,
    spec_dir: Path | None = None,
) -> dict:
    """What the run measured, end to end and per scenario, second and phase, with the stages'
    decomposition from the metrics, the stress and chaos analyses and the model's prediction."""
    seconds_run = min(data.wall_s, plan.duration_s) or plan.duration_s
    if data.phases:
        seconds_run = min(seconds_run, sum(p["duration_s"] for p in data.phases)) or seconds_run
    e2e = data.total.stats(seconds_run)
    measured: dict = {
        "kind": plan.kind,
        "level": plan.level,
        "offered_rps": max((p.rate_rps or 0) for p in plan.phases) or None,
        "duration_s": seconds_run,
        "end_to_end": e2e,
        "scenarios": {k: b.stats(seconds_run) for k, b in sorted(data.scenarios.items())},
        "seconds": data.seconds,
        "phases": data.phases,
        "stopped": data.stopped,
    }
    gen = generator_mod.assess(plan, data.phases, data.generator, data.lag)
    if gen is not None:
        gen["from_send"] = e2e.get("from_send")  # both latencies side by side in the report
        measured["generator"] = gen
    measured["decomposition"] = scrape.decompose(spec, before, after, e2e) if after else {}
    measured["stages"] = measured["decomposition"].get("stages", {}) if measured["decomposition"] else {}
    if plan.kind == "stress":
        measured["stress"] = analyse_stress(spec, data.phases, level)
        if basis is not None and basis.knee_rps is not None:
            measured["stress"]["predicted_knee_rps"] = round(basis.knee_rps, 6)  # archkit.perf.llm's
    if plan.kind == "chaos" and injector:
        measured["chaos"] = chaos_mod.analyse(injector.records, data.seconds, spec, plan.duration_s)
    measured["predicted"] = compare_mod.compare(spec, measured, opts.env, target_host, spec_dir)
    return measured


def _basis(spec: Spec, level: Level, spec_dir: Path) -> Basis | None:
    """The stress level's search basis; a prediction that fails only matters when the search
    starts from it (otherwise the run is compared without it, as `compare` does)."""
    if level.search is not None and level.search.start_rps is None:
        return search_basis(spec, level, spec_dir)
    try:
        return search_basis(spec, level, spec_dir)
    except Exception:  # a model bug must not lose the measurement
        return None


def execute(
    spec: Spec,
    spec_file: str,
    locustfile_text: str,
    opts: LoadtestOptions,
    workdir: Path,
    progress: Callable[[dict], None] | None = None,
    rule_files: dict[str, str] | None = None,
) -> Result:
    """Run one level against the spec's target (loopback only) and judge it."""
    spec_dir = Path(spec_file).resolve().parent
    level = plan_mod.find_level(spec, opts.level)
    # a stress level on an llm stage's streams: its predicted knee starts the search (when the
    # search names no start_rps) and is what the measured knee is compared with
    basis = _basis(spec, level, spec_dir) if level.kind == "stress" else None
    plan = plan_mod.build(spec, opts, Path(spec_file).name, basis)
    require_loopback(plan.host, "target")
    check_scenario_urls(spec)
    target_host = plan.host  # before a chaos delay proxy takes its place
    if opts.master_host:
        require_loopback(opts.master_host, "locust master")
    root = payload_root(spec, spec_dir)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    lf = workdir / "locustfile.py"
    lf.write_text(locustfile_text, encoding="utf-8")
    plan.locustfile, plan.payload_root = str(lf), str(root)

    injector, proxies = _chaos(spec, plan, opts, level) if plan.kind == "chaos" else (None, {})

    urls = scrape.endpoints(spec, target_host, list(opts.metrics))
    before = scrape.snapshot(urls)
    live_prom, alert_notes = _start_prometheus(opts, rule_files, before)

    def on_start(_wall: float) -> None:
        if injector:
            injector.start(time.monotonic())
        if live_prom:
            live_prom.mark_start()

    broken: list[int] = []

    def check(i: int, row: dict) -> bool:
        # one step past the first broken one shows how the service fails (and gives alerts time)
        if not step_met(spec, row, level):
            broken.append(i)
        return len(broken) < STEPS_PAST_KNEE

    check_fn = check if plan.kind == "stress" else None
    try:
        data = run(
            plan,
            workdir,
            workers=opts.workers,
            master_host=opts.master_host,
            master_port=opts.master_port,
            progress=progress,
            phase_check=check_fn,
            on_start=on_start,
        )
    finally:
        if injector:
            injector.stop()
        for p in proxies.values():
            p.close()
        alerts = _stop_prometheus(live_prom, alert_notes)
    after = scrape.snapshot(urls)

    measured = _measured(spec, plan, opts, data, before, after, injector, level, target_host, basis, spec_dir)
    verdicts = judge_mod.judge(spec, measured) + judge_llm.judge(spec, measured)
    b = spec.budgets
    budgets = {
        k: getattr(b, k)
        for k in ("p50_ms", "p95_ms", "p99_ms", "throughput_rps", "peak_throughput_rps", "error_rate")
        if getattr(b, k) is not None
    }
    return Result(
        spec_file=spec_file,
        spec_name=spec.metadata.name,
        env=opts.env,
        plan=plan,
        data=data,
        measured=measured,
        verdicts=verdicts,
        located=[located_verdict(spec, v, plan.level) for v in verdicts],
        alerts=alerts,
        alert_notes=alert_notes,
        environment=environment_info(),
        budgets=budgets,
    )
