"""`archkit capacity`: the queueing and batching analysis of each model stage, as a table."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import diag_line, fail

# archkit.api (the pydantic model, the analysis) is imported inside the command so that
# `archkit --help` stays fast.


class CapacityFormat(str, Enum):
    """Output formats of `archkit capacity`."""

    text = "text"
    json = "json"


def _f(v, unit: str = "") -> str:
    return "∞" if v is None else f"{v:g}{unit}"


def _text(rep) -> str:
    budget = "none" if rep.p99_budget_ms is None else f"{rep.p99_budget_ms:g} ms"
    rate = "none" if rep.arrival_rps is None else f"{rep.arrival_rps:g} req/s"
    lines = [f"{rep.name}: design rate {rate}, end-to-end P99 budget {budget}", ""]
    lines += _pipeline(rep.pipeline)
    # single-stage paths (e.g. a policy store feeding others asynchronously) add nothing
    shown = [p for p in rep.paths if len(p["stages"]) > 1] or rep.paths
    for p in shown:
        lines.append(
            f"path {' -> '.join(p['stages'])}: P50 sum {_f(p['p50_sum_ms'])} ms, P99 sum "
            f"{_f(p['p99_sum_ms'])} ms (independent-stages estimate {_f(p['p99_independent_ms'])} ms); "
            f"'{p['dominant']}' takes {_f(p['dominant_p99_ms'])} ms"
        )
    if shown:
        lines.append("")
    for w in rep.workers:
        lines.append(
            f"stage {w['stage']} (M/M/{w['servers']} workers): λ {_f(w['arrival_rps'])} req/s, "
            f"service {_f(w['service_ms'])} ms, ρ {w['rho']:.2f}, mean wait {_f(w['wait_mean_ms'])} ms, "
            f"P99 wait {_f(w['wait_p99_ms'])} ms"
        )
    if rep.workers:
        lines.append("")
    lines += _jobs(rep.jobs)
    lines += _pools(rep.pools)
    lines += _caches(rep.caches)
    from archkit.cli.capacity_llm import llm_text

    lines += llm_text(rep.llm)
    if not rep.stages and not rep.llm:
        lines += ["no model stages", ""]
    for s in rep.stages:
        lines.append(
            f"stage {s['stage']} (model {s['model']}, {s['device']}): {s['replicas']} replica(s) × "
            f"{s['instances']} instance(s), {_f(s['gpus_per_replica'])} GPU per replica, "
            f"λ {_f(s['arrival_rps'])} req/s, ceiling {_f(s['ceiling_rps'])} req/s"
        )
        lines.append(f"  binding budget: P99 {_f(s['budget_ms'], ' ms')} ({s['budget_source'] or 'none'})")
        d = s["declared"]
        if d:
            verdict = "meets" if d["meets"] else "OVER BUDGET"
            lines.append(
                f"  declared: batch {d['batch_size']}, max_queue_delay_us {d['max_queue_delay_us']} -> "
                f"mean batch {d['mean_batch']:g}, ρ {d['rho']:.2f}, P50 {_f(d['p50_ms'])} ms, "
                f"analytic P99 {_f(d['p99_ms'])} ms (simulated P50 {_f(d['sim_p50_ms'])} ms, "
                f"P99 {_f(d['sim_p99_ms'])} ms): {verdict}"
            )
            head = (
                f"  {'batch':>5} {'delay_us':>8} {'batch_ms':>8} {'per_item':>8} {'ceiling':>8} {'mean_B':>6} "
                f"{'rho':>5} {'P50_ms':>8} {'P99_ms':>8} {'simP50':>8} {'simP99':>8}  meets"
            )
            lines.append(head)
            for r in s["per_batch"]:
                lines.append(
                    f"  {r['batch_size']:>5} {r['max_queue_delay_us']:>8} {_f(r['batch_ms']):>8} "
                    f"{_f(r['per_item_ms']):>8} {_f(r['ceiling_rps']):>8} {r['mean_batch']:>6.2f} "
                    f"{r['rho']:>5.2f} {_f(r['p50_ms']):>8} {_f(r['p99_ms']):>8} "
                    f"{_f(r['sim_p50_ms']):>8} {_f(r['sim_p99_ms']):>8}  "
                    f"{'yes' if r['meets'] else 'no'}{' (extrapolated)' if r['extrapolated'] else ''}"
                )
        for w in s["why"]:
            lines.append(f"  why: {w}")
        for rec in s["recommendations"]:
            if rec["met"]:
                gpus = f" = {_f(rec['gpus'])} GPU(s)" if rec["gpus"] else ""
                lines.append(
                    f"  recommendation for {_f(rec['budget_ms'])} ms ({rec['budget_source']}): batch "
                    f"{rec['batch_size']}, max_queue_delay_us {rec['max_queue_delay_us']}, "
                    f"{rec['replicas']} replica(s) × {s['instances']} instance(s){gpus}: "
                    f"P50 {_f(rec['p50_ms'])} ms, analytic P99 {_f(rec['p99_ms'])} ms "
                    f"(simulated {_f(rec['sim_p99_ms'])} ms)"
                )
            else:
                lines.append(
                    f"  recommendation for {_f(rec['budget_ms'])} ms ({rec['budget_source']}): none: {rec['reason']}"
                )
        lines.append("")
    lines.append(
        "model: Poisson arrivals; fill time + M/D/c queueing of batches (Cosmetatos; one queue per "
        "replica for random routing) + interpolated per-batch service time; the analytic P99 adds "
        "component P99s (conservative when batches form); sim* columns simulate the batcher "
        "(10,000 requests, fixed seed); the pipeline lines share cores and GPUs. See docs/checks.md."
    )
    return "\n".join(lines) + "\n"


def _jobs(rows: list) -> list[str]:
    """Each batch GPU job's GPUs and what they leave the online stages (seed 004 §4.4, `perf.jobs`)."""
    out = []
    for j in rows:
        cap = "uncapped" if j["max_concurrency"] is None else f"cap {j['max_concurrency']}"
        per_hour = f", {j['tasks_per_hour']:g} tasks/h at its cap" if j["tasks_per_hour"] is not None else ""
        head = (
            f"job {j['job']} ({cap} × duty {j['duty_cycle']:g}{per_hour}): takes {j['gpus_taken']:g} of "
            f"{_f(j['units'])} GPU(s) of '{j['resource']}'"
        )
        if not j["online_stages"]:
            out.append(head + "; no online stage shares them")
            continue
        with_job = j["online_utilisation_with_job"]
        if j["online_utilisation"] is None:
            util = ""
        else:
            after = "no GPU left" if with_job is None else f"{100 * with_job:.0f} %"
            util = f": online {', '.join(j['online_stages'])} {100 * j['online_utilisation']:.0f} % → {after}"
            util += f" at {j['rate_rps']:g} req/s"
        out.append(f"{head}{util}, online ceiling {_f(j['online_ceiling_rps'], ' req/s')} while it runs")
    return out + ([""] if out else [])


def _pools(rows: list) -> list[str]:
    """Each connection pool against the concurrency the rate drives into it (seed 004 §1, `perf.pools`)."""
    out = []
    for r in rows:
        hold = f"{r['hold_ms']:g} ms hold" + ("" if r["hold_declared"] else f" ('{r['target']}' P99)")
        use = (
            f"{r['calls_per_s_per_replica']:.3g} calls/s × {hold} = {r['in_use']:.3g} in use, "
            f"{100 * r['wait_probability']:.1f} % of calls wait, at {r['rate_rps']:g} req/s; "
            if r["rate_rps"]
            else ""
        )
        out.append(
            f"pool {r['pool']} ({r['size']} connection(s) per '{r['client']}' replica × {r['replicas']} to "
            f"{r['target']}): {use}admits {_f(r['ceiling_rps'], ' req/s')}"
        )
    return out + ([""] if out else [])


def _caches(rows: list) -> list[str]:
    """Each cache's hit against its miss and their mix (seed 004 §3.3, `perf.cache`)."""
    out = []
    for r in rows:
        ratio = "" if r["hit_ratio"] is None else f"hit ratio {100 * r['hit_ratio']:g} %, "
        line = (
            f"cache {r['stage']} ({ratio}a hit skips {', '.join(r['skips'])}): a hit {_f(r['hit_ms'])} ms "
            f"instead of a miss's P50 {_f(r['miss_p50_ms'])} ms, P99 {_f(r['miss_p99_ms'])} ms"
        )
        if r["mixed_p99_ms"] is not None:
            line += f"; mixed P99 {_f(r['mixed_p99_ms'])} ms, mean at most {_f(r['mean_ms'])} ms"
        p = r["path"]
        if p:
            line += (
                f"; path {' -> '.join(p['stages'])}: P99 sum {_f(p['p99_sum_ms'])} -> "
                f"{_f(p['p99_sum_mixed_ms'])} ms with the mix"
            )
        out.append(line)
    return out + ([""] if out else [])


def _pipeline(p: dict | None) -> list[str]:
    """The whole pipeline: ceiling, bottleneck, per-resource utilisation, simulated end to end."""
    if not p:
        return []
    knee = _f(p["knee_rps"] and round(p["knee_rps"], 2), " req/s")
    sim_knee = p.get("simulated_knee_rps")
    if sim_knee is not None:
        seen = f" (simulated knee {_f(round(sim_knee, 2), ' req/s')})"
    elif p.get("budget_note"):
        seen = " (simulated knee: not settled within the simulation budget, see below)"
    elif "simulated_knee_rps" in p:
        seen = " (simulated: not served without fallbacks even at a fifth of it)"
    else:
        seen = ""
    out = [f"pipeline ceiling {knee}{seen}, bottleneck {p['bottleneck'] or 'none'}"]
    for r in p["resources"]:
        util = r["utilisation"]
        flag = "  OVER CAPACITY" if util is not None and util >= 1 else ""
        out.append(
            f"  resource {r['id']} ({_f(r['units'])} {'core' if r['kind'] == 'cpu' else 'GPU'}(s)): "
            f"{_f(round(r['demand_ms_per_request'], 1))} ms per request, utilisation "
            f"{'∞' if util is None else f'{100 * util:.0f} %'} at {_f(p['rate_rps'])} req/s, "
            f"ceiling {_f(r['ceiling_rps'] and round(r['ceiling_rps'], 2), ' req/s')} "
            f"({', '.join(r['stages'])}){flag}"
        )
    if p["p50_ms"] is None:
        e2e = "no simulated request was answered"
    else:
        e2e = (
            f"P50 {_f(round(p['p50_ms']))} ms, P95 {_f(round(p['p95_ms']))} ms, P99 {_f(round(p['p99_ms']))} ms, "
            f"throughput {_f(round(p['throughput_rps'], 2))} req/s"
        )
    extra = []
    if p["degraded_share"]:
        extra.append(f"{100 * p['degraded_share']:.1f} % answered by a fallback")
    if p["failed_share"]:
        extra.append(f"{100 * p['failed_share']:.1f} % failed")
    if not p["stable"]:
        extra.append("OVERLOADED")
    out.append(
        f"  simulated end to end at {_f(p['rate_rps'])} req/s: {e2e}"
        + (f" ({'; '.join(extra)})" if extra else "")
    )
    out += _user_ttft(p.get("user_ttft") or [])
    out.append(f"  ({p['method']})")
    if p.get("budget_note"):
        out.append(f"  budget: {p['budget_note']}")
    return out + [""]


def _user_ttft(rows: list) -> list[str]:
    """Each LLM stage's first token as the user sees it: the stages before it plus the engine's TTFT."""

    def pcts(d) -> str:
        return f"P50 {_ms(d['p50'])} / P95 {_ms(d['p95'])} / P99 {_ms(d['p99'])} ms"

    out = []
    for u in rows:
        verdict = ""
        if u["met"] is not None:
            verdict = f"; user_ttft_p99_ms {u['budget_p99_ms']:g}: {'meets' if u['met'] else 'OVER BUDGET'}"
        out.append(
            f"  simulated user TTFT at {u['stage']} ({u['visits']:,} visits): {pcts(u['user_ms'])}{verdict}"
        )
        out.append(f"    = before it {pcts(u['upstream_ms'])} + engine TTFT {pcts(u['engine_ms'])}")
    return out


def _ms(v) -> str:
    return "—" if v is None else f"{v:.1f}"


def _curve_text(curve) -> str:
    if not curve:
        return ""
    lines = ["offered load (whole-pipeline simulation at each rate):"]
    lines.append(
        f"  {'rate':>9} {'thruput':>9} {'P50 ms':>9} {'P95 ms':>9} {'P99 ms':>9} {'shed':>7} {'failed':>7}"
    )
    for p in curve["points"]:
        flag = "" if p["stable"] else "  OVERLOADED"
        lines.append(
            f"  {p['rate_rps']:>9g} {p['throughput_rps']:>9.2f} {_ms(p['p50_ms']):>9} {_ms(p['p95_ms']):>9} "
            f"{_ms(p['p99_ms']):>9} {100 * p['shed_share']:>6.1f}% {100 * p['failed_share']:>6.1f}%{flag}"
        )
    knee = "not reached" if curve["knee_rps"] is None else f"{curve['knee_rps']:g} req/s"
    lines.append(
        f"  knee: {knee} ({curve['knee_reason']}); closed-form ceiling {_ms(curve['ceiling_rps'])} req/s"
    )
    if curve.get("budget_note"):
        lines.append(f"  budget: {curve['budget_note']}")
    return "\n".join(lines) + "\n"


def _budget_warnings(spec: Path, rep) -> list[str]:
    """One stderr line per simulation the `--sim-budget` stopped: the pipeline's, the sweep's, and
    each LLM stage's at its `llm.workload` (file:line:col: the part of the spec asking the work)."""
    out = []
    llm = [r for r in rep.llm if r.get("budget_note")]
    located = llm or (rep.pipeline and rep.pipeline.get("budget_path"))
    smap = None
    if located:
        from archkit import api

        smap = api.load(spec).source

    def at(path: str | None) -> str:  # ":line:col" of a spec path (a co-simulated LLM stage's `llm`)
        from archkit.spec.sourcemap import parse_path

        line, col = smap.at(parse_path(path)) if smap and path else (1, 1)
        return f":{line}:{col}"

    if rep.pipeline and rep.pipeline.get("budget_note"):
        where = at(rep.pipeline["budget_path"]) if rep.pipeline.get("budget_path") else ""
        out.append(f"{spec}{where}: warning: {rep.pipeline['budget_note']}")
    if rep.curve and rep.curve.get("budget_note"):
        out.append(f"{spec}: warning: {rep.curve['budget_note']}")
    for r in llm:
        out.append(f"{spec}{at(r['budget_path'])}: warning: stage {r['stage']}: {r['budget_note']}")
    return out


@app.command()
def capacity(
    spec: Annotated[Path, typer.Argument(help="Spec file to analyse.", show_default=False)],
    env: Annotated[str | None, typer.Option(help="Apply this environment's overrides.")] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="With --env: this calibration file instead of the one the environment names."),
    ] = None,
    format: Annotated[
        CapacityFormat, typer.Option("--format", "-f", help="text or json.")
    ] = CapacityFormat.text,
    rate: Annotated[
        str | None,
        typer.Option(
            help="Predict at this offered rate (req/s), or sweep A:B:STEP: P50/P95/P99, throughput, "
            "shed share and the knee."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="With --rate: write the predicted latency-vs-load curve here (.svg or .png)."),
    ] = None,
    sim_budget: Annotated[
        int | None,
        typer.Option(
            min=1000,
            max=400_000_000,  # perf.pipeline.MAX_SIM_BUDGET (not imported here: `--help` stays fast)
            help="Simulated events for the whole run: the pipeline prediction, the LLM stages' "
            "simulations (its worth) and the knee search together, in that order, and the same "
            "again for a --rate sweep's rates together (default 4,000,000: ~2.5 CPU s each); a "
            "search that spends it stops and says so.",
        ),
    ] = None,
) -> None:
    """Predict latency per batch size for each model stage and recommend a configuration.

    Exit 1 when a stage's predicted P99 at its declared settings misses its budget.
    """
    from archkit import api
    from archkit.perf.curve import RateSpecError, parse_rates

    try:
        rates = parse_rates(rate) if rate is not None else None
    except RateSpecError as exc:
        raise fail(str(exc), 2) from None
    if plot is not None and rates is None:
        raise fail("--plot needs --rate (the rates to draw)", 2)
    if calibration is not None and not env:
        raise fail("--calibration needs --env (the environment whose calibration it replaces)", 2)
    cal = str(calibration) if calibration is not None else None
    rep = api.capacity(spec, env=env, rates=rates, plot=plot, calibration=cal, sim_budget=sim_budget)
    if rep.diagnostics:
        for d in rep.diagnostics:
            typer.echo(diag_line(d), err=True)
        raise fail(f"cannot analyse {spec}", 2)
    # AK230: a calibration from another machine than the target predicts for that machine
    foreign = api.calibration_findings(spec, env, cal)
    for line in _budget_warnings(spec, rep):  # issue 28: bounded work, said where it stopped
        typer.echo(line, err=True)
    if format is CapacityFormat.json:
        doc = rep.as_dict()
        if foreign:
            doc["findings"] = [d.as_dict() for d in foreign]
        typer.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        for d in foreign:
            typer.echo(diag_line(d), err=True)
        typer.echo(_text(rep) + _curve_text(rep.curve), nl=False)
    raise typer.Exit(1 if rep.missed else 0)
