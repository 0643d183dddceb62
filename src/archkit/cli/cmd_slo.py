"""`archkit slo export|import`: the spec's SLOs as OpenSLO v1 documents, and back into a `slos` section."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import archkit_errors, fail

slo_app = typer.Typer(help="Service level objectives as OpenSLO v1 documents.", no_args_is_help=True)
app.add_typer(slo_app, name="slo")

MAX_BYTES = 16 * 1024 * 1024  # an OpenSLO file larger than this is not a hand-kept SLO set


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
    from archkit.openslo import dump_documents, export_documents
    from archkit.plans.context import prepare

    with archkit_errors():
        ctx = prepare(spec, env)
        _write(dump_documents(export_documents(ctx.spec)), output)


@slo_app.command("import")
def import_(
    files: Annotated[list[Path], typer.Argument(help="OpenSLO v1 YAML files.", show_default=False)],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="A new file (default: stdout).")
    ] = None,
) -> None:
    """Read OpenSLO SLO, SLI and AlertPolicy documents; write a spec's `slos` section (never overwriting)."""
    from archkit.openslo import import_documents, spec_fragment

    entries = []
    with archkit_errors():
        for f in files:
            try:
                with f.open("rb") as fh:
                    data = fh.read(MAX_BYTES + 1)
            except OSError as exc:
                raise fail(f"{f}: cannot read: {exc.strerror}") from None
            if len(data) > MAX_BYTES:
                raise fail(f"{f}: larger than {MAX_BYTES // 2**20} MiB")
            got, notes = import_documents(data.decode("utf-8", "replace"), str(f))
            entries += got
            for n in notes:
                typer.echo(f"archkit: {f}: {n}", err=True)
        if not entries:
            raise fail("no OpenSLO SLO documents found")
        _write(spec_fragment(entries), output)
