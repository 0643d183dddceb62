"""`archkit loadtest`: run a level of the spec's load test against a local target and judge its budgets."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail, fail_for, paint

if TYPE_CHECKING:  # the CLI imports api and the load-test modules only when a command runs
    from archkit import api
    from archkit.loadtest.judge import Verdict


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


class Engine(str, Enum):
    locust = "locust"
    k6 = "k6"


class Arrival(str, Enum):
    constant = "constant"
    poisson = "poisson"
    closed = "closed"


def _progress_printer(level: str):
    """A one-line live status on stderr (only on a terminal)."""
    if not sys.stderr.isatty():
        return None
    sys.stderr.write(f"[{level}] starting the load generator...")
    sys.stderr.flush()

    def show(row: dict) -> None:
        n, err = row["requests"], row["errors"]
        rate = f"{row['offered_rps']:g}" if row.get("offered_rps") else "max"
        line = (
            f"[{level}] {row['t']:>4d}s  {n:>6d} req/s (offered {rate})  P50 {row['p50_ms'] or 0:8.2f} ms  "
            f"P99 {row['p99_ms'] or 0:8.2f} ms  errors {err} ({(err / n * 100) if n else 0:.1f}%)  "
            f"left {row['time_left_s']:.0f}s   "
        )
        sys.stderr.write("\r" + line)
        sys.stderr.flush()

    return show


def stream_lines(measures: dict) -> list[str]:
    """The streaming measures of a run, one line each (nothing when no request streamed)."""
    out = []
    for key, label in (
        ("ttft_ms", "TTFT"),
        ("itl_ms", "ITL"),
        ("tpot_ms", "TPOT"),
        ("setup_ms", "stream setup"),
    ):
        got = measures.get(key)
        if got:
            out.append(
                f"{label}: P50 {got['p50_ms']} ms, P95 {got['p95_ms']} ms, P99 {got['p99_ms']} ms (n={got['count']})"
            )
    ratio = measures.get("chunks_per_token")
    if ratio:
        out.append(
            f"streamed {ratio['output_tokens']} output tokens in {ratio['content_chunks']} chunks "
            f"({ratio['ratio']} chunks per token)"
        )
    return out


@app.command()
def loadtest(
    spec: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    level: Annotated[
        str, typer.Option("--level", "-l", help="baseline, stress, chaos, or a level id of the spec.")
    ] = "baseline",
    env: Annotated[str | None, typer.Option(help="Judge against this environment's budgets.")] = None,
    calibration: Annotated[
        Path | None,
        typer.Option(help="With --env: predict from this calibration file instead of the environment's."),
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="Target base URL (loopback only); default: loadtest.target.host.")
    ] = None,
    users: Annotated[int | None, typer.Option(min=1, help="Concurrent users (default: the level's).")] = None,
    rate: Annotated[
        float | None, typer.Option(min=0.001, help="Offered requests/s (stress: the top step).")
    ] = None,
    duration: Annotated[
        float | None, typer.Option(min=0.5, help="Seconds to run (default: the level's).")
    ] = None,
    max_requests: Annotated[int | None, typer.Option(min=1, help="Stop after this many requests.")] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", "--report", help="Write the report (MD, HTML, JSON, JUnit) in this folder."
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(min=0, help="Run a locust master and N local worker processes.")
    ] = 0,
    master_host: Annotated[
        str | None, typer.Option(help="Join this locust master with N workers instead.")
    ] = None,
    master_port: Annotated[int, typer.Option(help="Port of --master-host.")] = 5557,
    service: Annotated[
        list[str] | None,
        typer.Option(help="Chaos: NAME=PID or NAME=@PIDFILE, the local process of spec service NAME."),
    ] = None,
    proxy: Annotated[
        list[str] | None,
        typer.Option(help="Chaos: NAME=LISTEN_PORT:UPSTREAM_PORT, a delay proxy for an inner service."),
    ] = None,
    metrics: Annotated[list[str] | None, typer.Option(help="Extra metrics URL to scrape (loopback).")] = None,
    rules: Annotated[
        list[Path] | None,
        typer.Option(help="Alert rule file for the live Prometheus (default: the rules archkit generates)."),
    ] = None,
    no_prometheus: Annotated[
        bool, typer.Option("--no-prometheus", help="Do not run a live Prometheus.")
    ] = False,
    arrival: Annotated[
        Arrival | None,
        typer.Option(
            help="Open model (constant or poisson arrivals; default for baseline and stress) or closed "
            "(users wait for answers; default for chaos)."
        ),
    ] = None,
    max_inflight: Annotated[
        int | None,
        typer.Option(min=1, help="Open model: requests in flight at most; beyond it a request is dropped."),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="Count an inconclusive budget (too few samples, or an interval that straddles it) as missed.",
        ),
    ] = False,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    engine: Annotated[
        Engine,
        typer.Option(
            help="Load generator: archkit's locust runner, or the real k6 running render's k6/script.js."
        ),
    ] = Engine.locust,
) -> None:
    """Load-test the spec's target and judge its budgets (exit 1 when one is missed).

    Levels (seed 000 §4.4): baseline at the design rate; stress steps the rate up to find the
    knee; chaos applies the level's faults. Traffic only ever goes to loopback addresses.
    """
    from archkit import api

    if calibration is not None and not env:
        raise fail("--calibration needs --env (the environment whose calibration it replaces)", 2)
    if engine is Engine.k6:
        if format is Format.sarif:
            raise fail("--engine k6 reports as text or json", 2)
        _run_k6(spec, level, env, host, rate, duration, format)
    try:
        options = api.LoadtestOptions(
            level=level,
            env=env,
            host=host,
            users=users,
            rate=rate,
            duration=duration,
            max_requests=max_requests,
            arrival=arrival.value if arrival else None,
            max_inflight=max_inflight,
            workers=workers,
            master_host=master_host,
            master_port=master_port,
            services=tuple(service or ()),
            proxies=tuple(proxy or ()),
            metrics=tuple(metrics or ()),
            rules=tuple(str(p) for p in rules or ()),
            prometheus=not no_prometheus,
            calibration=str(calibration) if calibration is not None else None,
        )
        outcome = api.loadtest(spec, options=options, report_dir=report, progress=_progress_printer(level))
    except api.ArchkitError as exc:
        raise fail_for(exc) from None
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\n")
    from archkit.loadtest import judge as judge_mod
    from archkit.loadtest import report as report_mod

    res = outcome.result
    ok = judge_mod.passed(res.verdicts, strict=strict)
    undecided = judge_mod.inconclusive(res.verdicts)
    if res.generator_error:  # the numbers describe the generator, not the service: refuse them
        where = f" (report: {outcome.report_dir / 'report.html'})" if outcome.report_dir else ""
        raise fail(res.generator_error + where, 2)
    if format is Format.json:
        typer.echo(json.dumps(report_mod.result_json(res), indent=1, ensure_ascii=False, default=str))
    elif format is Format.sarif:
        from archkit import __version__
        from archkit.loadtest.results import sarif_log

        typer.echo(sarif_log(res, __version__), nl=False)
    else:
        _echo_text(outcome, undecided, strict)
    raise typer.Exit(0 if ok else 1)


def _echo_text(outcome: api.LoadtestOutcome, undecided: list[Verdict], strict: bool) -> None:
    """The text report of a run: the measures, the faults and alerts, each budget's verdict."""
    from archkit.loadtest import compare as compare_mod

    res = outcome.result
    m = res.measured["end_to_end"]
    typer.echo(
        f"{res.spec_name} {res.plan.level} ({res.plan.kind}): {m['requests']} requests in "
        f"{res.measured['duration_s']:g} s, {m.get('throughput_rps')} ok req/s, "
        f"P50 {m.get('p50_ms')} ms, P95 {m.get('p95_ms')} ms, P99 {m.get('p99_ms')} ms, "
        f"error rate {m.get('error_rate')}"
    )
    for line in stream_lines(m.get("measures") or {}):
        typer.echo(line)
    gen = res.measured.get("generator")
    if gen:
        fs = m.get("from_send") or {}
        typer.echo(
            f"open model ({gen['arrival']} arrivals, at most {gen['max_inflight']} in flight): "
            f"{gen['sent']} of {gen['scheduled']} scheduled requests sent, {gen['dropped']} dropped; "
            f"latency from the scheduled send time above, from the actual send P50 {fs.get('p50_ms')} ms, "
            f"P99 {fs.get('p99_ms')} ms; send lag P99 {gen['send_lag'].get('p99_ms')} ms"
        )
        if gen.get("message"):
            typer.echo(f"note: {gen['message']}")
    if res.measured.get("stress"):
        st = res.measured["stress"]
        typer.echo(f"knee: {st['knee_rps']} req/s; past it: {st['failure_mode']}")
    for line in compare_mod.prediction_lines(res.measured.get("predicted") or {}):
        typer.echo(line)
    for f in res.measured.get("chaos") or []:
        typer.echo(
            f"fault {f['action']} {f['target']} at {f.get('started_s')} s: {f.get('burst_errors')} errors, "
            f"recovery {f.get('recovery_s')} s, fallback answers {f.get('fallback_answers', '—')}"
            + (f" ({f['error']})" if f.get("error") else "")
        )
    for a in res.alerts:
        typer.echo(f"alert {a['alert']}: pending at {a['pending_s']} s, firing at {a['firing_s']} s")
    for note in res.alert_notes:
        typer.echo(f"note: {note}")
    for v in res.verdicts:
        mark = {True: paint("PASS", "\033[32m"), False: paint("FAIL", "\033[31m"), None: "SKIP"}[v.passed]
        if v.inconclusive:
            mark = paint("INCONCLUSIVE", "\033[33m")
        typer.echo(f"{mark}  {v.id}: {v.why}")
    if outcome.report_dir:
        typer.echo(f"report: {outcome.report_dir / 'report.html'}")
    if not res.passed:
        typer.echo("FAILED: a budget was missed")
    elif undecided:
        longest = max((v.decide_s or 0.0 for v in undecided), default=0.0)
        hint = f"; a run of ~{longest:g} s would decide them" if longest else ""
        typer.echo(
            f"{'FAILED' if strict else 'PASSED'}: {len(undecided)} budget(s) inconclusive"
            f"{' (--strict counts them as missed)' if strict else ', none missed'}{hint}"
        )
    else:
        typer.echo("PASSED")


def _run_k6(
    spec: Path,
    level: str,
    env: str | None,
    host: str | None,
    rate: float | None,
    duration: float | None,
    fmt: Format,
) -> None:
    """`--engine k6`: the generated k6 script under the real k6, judged by the same budget judge."""
    from archkit import api
    from archkit.loadtest.k6 import result_text

    try:
        res = api.loadtest_k6(spec, level, env=env, host=host, rate=rate, duration=duration)
    except api.ArchkitError as exc:
        raise fail_for(exc) from None
    if fmt is Format.json:
        typer.echo(json.dumps(res.to_json(), indent=1, ensure_ascii=False, default=str))
    else:
        for line in result_text(res):
            typer.echo(line)
        for v in res.verdicts:
            mark = {True: paint("PASS", "\033[32m"), False: paint("FAIL", "\033[31m"), None: "SKIP"}[v.passed]
            typer.echo(f"{mark}  {v.id}: {v.why}")
        typer.echo("PASSED" if res.passed else "FAILED: a budget was missed")
    raise typer.Exit(0 if res.passed else 1)
