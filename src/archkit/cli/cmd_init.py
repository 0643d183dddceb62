"""`archkit init`: write a starter spec."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from archkit.cli import app
from archkit.cli.output import fail


@app.command()
def init(
    path: Annotated[Path, typer.Argument(help="Where to write the spec.")] = Path("archkit.yaml"),
    example: Annotated[str | None, typer.Option(help="Start from a bundled example (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the bundled examples.")] = False,
) -> None:
    """Write a starter spec. Never overwrites an existing file."""
    from archkit import api

    if list_:
        for name in api.examples():
            typer.echo(name)
        return
    try:
        written = api.init(path, example)
    except FileExistsError:
        raise fail(f"{path} already exists; not overwriting it (choose another path)", 2) from None
    except KeyError:
        raise fail(f"no example {example!r}; available: {', '.join(api.examples())}", 2) from None
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}", 2) from None
    typer.echo(f"wrote {written}; next: archkit check {written}")
