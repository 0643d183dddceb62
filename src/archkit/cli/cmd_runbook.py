"""`archkit runbook`: print a fault tree's checks in order, or walk them live with --run."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail, fail_for, paint
from archkit.runbook.terminal import has_hidden, shown


class RunbookFormat(str, Enum):
    """Output formats of `archkit runbook`."""

    text = "text"
    json = "json"


def _indent(text: str, prefix: str = "    ") -> str:
    text = shown(text, keep="\n\t")  # a check's output may carry colours or \r progress bars
    return (
        "\n".join(prefix + line for line in text.rstrip("\n").split("\n"))
        if text.strip()
        else prefix + "(no output)"
    )


def _command(command: str, prefix: str) -> list[str]:
    """The command exactly as it runs: hidden characters escaped, and said so."""
    lines = [f"{prefix}$ {shown(command)}"]
    if has_hidden(command):
        lines.append(
            f"{prefix}  (contains control or invisible characters, shown escaped; --run executes them as written)"
        )
    return lines


def _observation(obs) -> list[str]:
    """What the walk established: observed events, complete and nearly complete cut sets."""
    out = ["", "After the walk:"]
    out.append(
        f"  observed failed: {', '.join(obs.failed) or 'none'}; healthy: {', '.join(obs.healthy) or 'none'}"
    )
    for cs in obs.complete:
        out.append("  explained by the cut set {" + ", ".join(cs) + "}")
    for item in obs.one_short[:5]:
        out.append("  one event short: {" + ", ".join(item["cut_set"]) + f"}} needs {item['missing']}")
    if not obs.complete:
        out.append(f"  cut sets ruled out: {obs.ruled_out}, still open: {obs.remaining}")
        if obs.probability is not None:
            out.append(f"  P(top | observations) = {obs.probability:.3g}")
        if obs.next_checks:
            out.append("  check next: " + ", ".join(obs.next_checks[:5]))
    if obs.note:
        out.append(f"  note: {obs.note}")
    return out


@app.command()
def runbook(
    spec: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    tree: Annotated[
        str | None, typer.Option("--tree", "-t", help="Fault tree id (optional if the spec has one).")
    ] = None,
    run: Annotated[bool, typer.Option("--run", help="Run the checks; without it nothing runs.")] = False,
    timeout: Annotated[
        float | None, typer.Option(help="Per-check timeout in seconds (overrides timeout_s).", min=0.001)
    ] = None,
    format: Annotated[
        RunbookFormat, typer.Option("--format", "-f", help="text or json.")
    ] = RunbookFormat.text,
) -> None:
    """Walk a fault tree's checks in order: command, expected output, remedy.

    Without --run, prints the plan and runs nothing. With --run, prints each command before
    running it exactly as the spec writes it, stops at the first check whose output does not
    match (the confirmed cause) and prints its remedy. Exit 1 when a cause is confirmed.
    """
    from archkit import api
    from archkit.errors import ArchkitError

    as_json = format is RunbookFormat.json
    # in JSON mode stdout carries only the report; progress goes to stderr
    out = sys.stderr if as_json else sys.stdout

    def say(text: str = "") -> None:
        print(text, file=out, flush=True)

    def on_start(step, total) -> None:
        say(f"[{step.n}/{total}] {shown(step.label)} ({step.event})")
        if step.command:
            for line in _command(step.command, "  "):
                say(line)

    def on_result(step, res) -> None:
        if res.status == "healthy":
            say(f"  ok: {shown(res.reason)} ({res.duration_s:g} s)")
        elif res.status == "cause":
            say(_indent(res.output))
            say("  " + paint(f"MISMATCH: {shown(res.reason)}", "\033[31m"))
        elif res.status == "unjudged":
            say(_indent(res.output))
            say(f"  ? {shown(res.reason)}")
        else:
            say(f"  skipped: {res.reason}")

    try:
        report = api.runbook(
            spec,
            tree,
            run=run,
            timeout=timeout,
            on_start=on_start if run else None,
            on_result=on_result if run else None,
        )
    except ArchkitError as exc:  # the spec does not load, an unknown tree
        raise fail_for(exc) from None
    except OSError as exc:
        raise fail(f"cannot run a check: {exc}", 2) from None
    except KeyboardInterrupt:
        raise fail("interrupted; the running check was stopped", 130) from None

    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    elif not run:
        say(
            f"Runbook for {report.label} ({report.tree}): {len(report.steps)} check(s), in order. "
            "Nothing runs without --run."
        )
        if report.note:
            say(f"note: {report.note}")
        for s in report.steps:
            say()
            figures = (
                ""
                if s.importance is None
                else f"  [p={s.probability:.3g}, share of top event {s.importance:.1%}]"
            )
            say(f"{s.n}. {shown(s.label)} ({s.event}){figures}")
            for line in _command(s.command, "   ") if s.command else ["   (no check command)"]:
                say(line)
            say(f"   expect: {shown(s.expectation())}; timeout {s.timeout_s:g} s")
            if s.mismatch_means:
                say(f"   mismatch means: {shown(s.mismatch_means)}")
            if s.remedy:
                say(f"   remedy: {shown(s.remedy)}")
        say()
        say(f"If every check passes: {shown(report.escalation or '')}.")
    else:
        if report.note:
            say(f"note: {shown(report.note)}")
        step = report.cause_step
        obs = report.observation
        if step is not None:
            say()
            say(paint(f"Cause confirmed: {shown(step.label)} ({step.event})", "\033[31m"))
            if step.mismatch_means:
                say(f"Means: {shown(step.mismatch_means)}")
            say(f"Remedy: {shown(step.remedy or 'none declared; ' + (report.escalation or 'escalate'))}")
        else:
            say()
            say(f"No cause confirmed among {len(report.steps)} check(s); {shown(report.escalation or '')}.")
        if obs is not None:
            for line in _observation(obs):
                say(line)
    raise typer.Exit(1 if report.cause else 0)
