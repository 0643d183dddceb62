"""`archkit check`, `archkit rules`, `archkit explain`, `archkit schema`."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail

# archkit.api (and the pydantic model behind it) is imported inside each command, so that
# `archkit --help` and `--version` stay fast.


class CheckFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"


def _codes(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [c.strip().upper() for c in v.split(",") if c.strip()]
    return out


@app.command()
def check(
    specs: Annotated[list[Path], typer.Argument(help="Spec files to check.", show_default=False)],
    format: Annotated[CheckFormat, typer.Option("--format", "-f", help="Output format.")] = CheckFormat.text,
    select: Annotated[
        list[str] | None, typer.Option(help="Only these codes or prefixes (AK2, AK203).")
    ] = None,
    ignore: Annotated[list[str] | None, typer.Option(help="Skip these codes or prefixes.")] = None,
    env: Annotated[str | None, typer.Option(help="Apply this environment's budget overrides.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report here.")] = None,
) -> None:
    """Check specs for design faults: structure, capacity, resilience, topology, security.

    Exit 1 when any error is found.
    """
    from archkit import __version__, api
    from archkit.cli.output import diag_line
    from archkit.diagnostics import summary_line, to_json

    missing = [p for p in specs if str(p) != "-" and not p.exists()]
    if missing:  # nothing to check is an input problem (2), not a finding (1)
        raise fail(f"{missing[0]}: no such file")
    from archkit.cli.output import refuse_existing

    refuse_existing(output)  # before the work: the report never replaces a user's file
    from archkit.cli.output import ticking

    with ticking(f"checking {len(specs)} spec(s)"):  # a 1,000-stage spec takes about a second
        report = api.check(specs, select=_codes(select), ignore=_codes(ignore), env=env)
    diags, quiet = report.diagnostics, report.suppressed
    if format is CheckFormat.json:
        text = to_json(diags, quiet)
    elif format is CheckFormat.sarif:
        text = api.check_sarif([*diags, *quiet], __version__)
    else:
        lines = [diag_line(d) for d in diags]
        lines.append(f"{len(report.files)} file(s) checked: {summary_line(diags, len(quiet))}")
        text = "\n".join(lines) + "\n"
    if output:
        from archkit.cli.output import write_new

        write_new(output, text)  # a user's file (or a symlink) is never replaced
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(1 if report.failed else 0)


class RulesFormat(str, Enum):
    text = "text"
    json = "json"


@app.command()
def rules(
    format: Annotated[RulesFormat, typer.Option("--format", "-f", help="text or json.")] = RulesFormat.text,
) -> None:
    """List the check catalogue."""
    from archkit import api

    meta = api.rules()
    if format is RulesFormat.json:
        typer.echo(json.dumps(meta, indent=2, ensure_ascii=False))
        return
    for code, m in meta.items():
        typer.echo(f"{code}  {m['severity']:<7}  {m['name']:<32}  {m['summary']}")
    typer.echo(f"{len(meta)} rules")


@app.command()
def explain(
    code: Annotated[
        str,
        typer.Argument(help="A code: a rule (AK203), a verify check (VK121) or a load-test verdict (LT101)."),
    ],
) -> None:
    """Explain a code: what it finds, why, and which seed it comes from."""
    from archkit import api

    text = api.explain(code)
    if text is None:
        raise fail(f"no rule or other code {code!r}; see `archkit rules` and docs/verify.md", 2)
    typer.echo(text, nl=False)


class SchemaFormat(str, Enum):
    json = "json"
    markdown = "markdown"


@app.command()
def schema(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")] = None,
    format: Annotated[
        SchemaFormat, typer.Option("--format", "-f", help="json (JSON Schema) or markdown (field reference).")
    ] = SchemaFormat.json,
) -> None:
    """Print the JSON Schema of the archkit/v1 spec (or its Markdown field reference)."""
    from archkit import api

    text = api.schema() if format is SchemaFormat.json else api.spec_reference()
    if output:
        from archkit.atomic import write_atomic

        write_atomic(output, text)
    else:
        typer.echo(text, nl=False)
