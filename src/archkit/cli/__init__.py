"""The `archkit` command line: a thin typer layer over `archkit.api`.

Each command lives in its own module here and registers itself on `app`; heavy clients
(locust, kubernetes, tritonclient) are imported only inside the command that runs them,
so `archkit --help` stays fast.

Exit codes: 0 success; 1 findings, drift or a missed budget; 2 usage or input error.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Annotated

import typer

from archkit import __version__
from archkit.cli.usage import ArchkitGroup

app = typer.Typer(
    name="archkit",
    cls=ArchkitGroup,  # usage errors as one line `archkit: ...`, exit 2
    help="Architecture as code for AI services: check, render, verify and load-test one YAML spec.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"archkit {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Architecture as code for AI services."""


_LOADED = False


def _load_commands() -> None:
    global _LOADED
    if _LOADED:
        return
    import archkit.cli as pkg

    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name.startswith("cmd_"):
            importlib.import_module(f"archkit.cli.{mod.name}")
    _LOADED = True


def main() -> None:
    """Console-script entry point."""
    _load_commands()
    app()
