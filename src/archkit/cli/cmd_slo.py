"""`archkit slo export|import`: the spec's SLOs as OpenSLO v1 documents, and back into a `slos` section."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import archkit_errors

slo_app = typer.Typer(help="Service level objectives as OpenSLO v1 documents.", no_args_is_help=True)
app.add_typer(slo_app, name="slo")


def _write(text: str, output: Path | None) -> None:
    """To stdout, or to a new file: never over a file that is there."""
    if output is None:
        typer.echo(text, nl=False)
        return
    from archkit.cli.output import write_new

    write_new(output, text)
    typer.echo(f"archkit: wrote {output}", err=True)


@slo_app.command("export")
def export(
    spec: Annotated[Path, typer.Argument(help="The spec file.", show_default=False)],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="A new file (default: stdout).")
    ] = None,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Environment whose overrides apply.")] = None,
) -> None:
    """Write the spec's SLOs (declared, or derived from its budgets) as OpenSLO v1 YAML documents."""
    from archkit import api

    with archkit_errors():
        _write(api.slo_export(spec, env), output)


@slo_app.command("import")
def import_(
    files: Annotated[list[Path], typer.Argument(help="OpenSLO v1 YAML files.", show_default=False)],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="A new file (default: stdout).")
    ] = None,
) -> None:
    """Read OpenSLO SLO, SLI and AlertPolicy documents; write a spec's `slos` section (never overwriting)."""
    from archkit import api

    def note(f: Path, text: str) -> None:
        typer.echo(f"archkit: {f}: {text}", err=True)

    with archkit_errors():
        _write(api.slo_import(list(files), note), output)
