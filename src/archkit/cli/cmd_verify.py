"""`archkit verify`: a cluster (live, snapshot or manifests), Triton and Prometheus against the spec.

The source options (`--snapshot`, `--triton-url`, ...) come from the verify source registry:
each source declares its own, so a new source adds its options here without an edit.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from archkit.cli import app
from archkit.cli.output import diag_line, fail, fail_for, use_colour


class VerifyFormat(str, Enum):
    text = "text"
    json = "json"
    junit = "junit"
    sarif = "sarif"


class FailOn(str, Enum):
    drift = "drift"
    unknown = "unknown"
    never = "never"


def verify(
    spec: Annotated[
        Path | None, typer.Argument(help="The spec to verify against.", show_default=False)
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 10.0,
    env: Annotated[str | None, typer.Option(help="Apply this environment's overrides to the spec.")] = None,
    format: Annotated[
        VerifyFormat, typer.Option("--format", "-f", help="text, json, junit or sarif.")
    ] = VerifyFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here.")] = None,
    fail_on: Annotated[
        FailOn, typer.Option(help="Exit 1 on drift (default), on drift or unknown, or never.")
    ] = FailOn.drift,
    only_problems: Annotated[
        bool, typer.Option("--problems", help="Text format: hide passing checks.")
    ] = False,
    allow_endpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-endpoint",
            metavar="ADDRESS|NETWORK|HOST",
            help="A non-loopback endpoint verify may connect to (repeatable, or comma-separated): an "
            "address, a network such as 10.0.0.0/8, or a host name. Without it only loopback is reached.",
        ),
    ] = None,
    print_rbac: Annotated[
        bool,
        typer.Option("--print-rbac", help="Print the read-only ClusterRole this command needs, and exit."),
    ] = False,
    **source_options: Any,
) -> None:
    """Verify a running system against the spec, read-only: exit 1 on drift."""
    from archkit import __version__, api
    from archkit.errors import ArchkitError
    from archkit.verify import to_json, to_junit, to_sarif, to_text

    if print_rbac:
        typer.echo(api.verify_rbac(), nl=False)
        raise typer.Exit(0)
    if spec is None:
        raise fail("missing SPEC; usage: archkit verify SPEC [--snapshot F | --manifests D | --live] ...", 2)
    try:
        from archkit.cli.output import ticking

        with ticking(f"verifying {spec}"):  # live reads take up to --timeout per request
            result = api.verify(
                spec,
                timeout_s=timeout,
                env=env,
                default_source=True,
                allow_endpoints=allow_endpoint or (),
                **source_options,
            )
    except ArchkitError as exc:  # the spec's environment, a source that cannot be read, bad options
        raise fail_for(exc) from None
    except (ValueError, KeyError) as exc:
        raise fail(str(exc).strip("'\""), 2) from None
    if result.report is None:
        for d in result.diagnostics:
            typer.echo(diag_line(d), err=True)
        raise fail(f"{spec}: the spec has errors; fix them (see `archkit check {spec}`)", 2)
    report = result.report
    if format is VerifyFormat.json:
        text = to_json(report)
    elif format is VerifyFormat.junit:
        text = to_junit(report)
    elif format is VerifyFormat.sarif:
        text = to_sarif(report, __version__)
    else:
        text = to_text(report, colour=output is None and use_colour(), show_pass=not only_problems)
    if output:
        from archkit.atomic import write_atomic

        write_atomic(output, text)
        typer.echo(report.summary(), err=True)
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(1 if report.failed(fail_on.value) else 0)


def with_source_options(command: Callable[..., None]) -> Callable[..., None]:
    """The command with one CLI option per option the registered verify sources declare.

    They follow the SPEC argument, in source order; their values reach the command as
    `**source_options` (only those given, so a source sees None for the rest).
    """
    from archkit.verify.registry import all_options

    options = all_options()
    params = list(inspect.signature(command, eval_str=True).parameters.values())
    first, rest = params[:1], [p for p in params[1:] if p.kind is not inspect.Parameter.VAR_KEYWORD]
    added = []
    for opt in options:
        if opt.flag:
            annotation: Any = Annotated[bool, typer.Option(opt.cli, help=opt.help)]
            default: Any = False
        else:
            annotation = Annotated[opt.type | None, typer.Option(opt.cli, help=opt.help, metavar=opt.metavar)]
            default = None
        added.append(
            inspect.Parameter(
                opt.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
    names = {o.name for o in options}

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        given = {k: v for k, v in kwargs.items() if k in names and v not in (None, False)}
        command(**{k: v for k, v in kwargs.items() if k not in names}, **given)

    wrapper.__doc__ = (command.__doc__ or "") + "\n\n" + _sources_help()
    keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in first + rest]
    wrapper.__signature__ = inspect.Signature(keyword[:1] + added + keyword[1:])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in keyword + added}
    return wrapper


def _sources_help() -> str:
    """One line per registered source for the command's help: its title and its options."""
    from archkit.verify.registry import sources

    lines = []
    for src in sources():
        opts = ", ".join(o.cli for o in src.options)
        default = "; the default when no source is given" if src.default else ""
        lines.append(f"{src.title}: {opts}{default}.")
    return "\n\n".join(lines)


app.command(name="verify")(with_source_options(verify))
