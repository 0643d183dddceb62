"""`archkit doctor`: every external tool archkit can use, its version and what it enables."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import diag_line, fail


class DoctorFormat(str, Enum):
    text = "text"
    json = "json"


@app.command()
def doctor(
    spec: Annotated[
        Path | None,
        typer.Argument(help="A spec: what its outputs need decides the exit code.", show_default=False),
    ] = None,
    format: Annotated[DoctorFormat, typer.Option("--format", "-f", help="text or json.")] = DoctorFormat.text,
) -> None:
    """List the external tools archkit uses (dot, java + PlantUML, promtool, prometheus, locust, k6, ...).

    Exit 1 if one that SPEC needs (without SPEC: what `archkit render` needs) is missing.
    """
    from archkit import api

    loaded = None
    if spec is not None:
        if not spec.is_file():
            raise fail(f"{spec}: no such file")
        res = api.load(spec)
        if res.spec is None:
            for d in res.diagnostics:
                typer.echo(diag_line(d), err=True)
            raise fail(f"{spec}: the spec does not load")
        loaded = res.spec
    tools = api.doctor(loaded)
    missing = [t for t in tools if t.needed and not t.found]
    if format is DoctorFormat.json:
        typer.echo(json.dumps({"tools": [t.as_dict() for t in tools]}, indent=2, ensure_ascii=False))
    else:
        for t in tools:
            mark = "ok     " if t.found else ("MISSING" if t.needed else "absent ")
            version = f" {t.version}" if t.version else ""
            where = f" ({t.where})" if t.where else ""
            typer.echo(f"{mark} {t.name}{version}{where}: {t.enables}")
            if not t.found:
                typer.echo(f"        install: {t.fix}")
        what = f"{spec} needs" if spec is not None else "archkit render needs"
        typer.echo(f"{len(missing)} tool(s) {what} missing" if missing else f"everything {what} is here")
    raise typer.Exit(1 if missing else 0)
