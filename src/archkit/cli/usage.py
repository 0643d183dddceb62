"""Usage errors as one line, `archkit: COMMAND: message`, with a did-you-mean for option values."""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer import _click as click
from typer.core import TyperGroup

USAGE_EXIT = 2
_NOT_ONE_OF = re.compile(r"'([^']*)' is not one of ")


def did_you_mean(value: str, choices: Sequence[str]) -> str:
    """` — did you mean 'x'?` when `value` is close to one of `choices`, else ``."""
    close = difflib.get_close_matches(value.lower(), [c.lower() for c in choices], n=1, cutoff=0.5)
    if not close:
        return ""
    match = next(c for c in choices if c.lower() == close[0])
    return f" — did you mean {match!r}?"


def usage_line(exc: click.exceptions.UsageError) -> str:
    """The whole usage error in one line, naming the command and how to get its help."""
    ctx = exc.ctx
    path = ctx.command_path if ctx is not None else "archkit"
    where = path.split(" ", 1)[1] + ": " if " " in path else ""
    message = " ".join(exc.format_message().split())
    message = message.removeprefix("Error: ").replace("Value error, ", "")
    m = _NOT_ONE_OF.search(message)
    if m:  # typer's choice error lists the choices in the message (its parameters carry no type)
        choices = re.findall(r"'([^']*)'", message[m.end() :])
        message = message.rstrip(".") + did_you_mean(m.group(1), choices)
    message = message[:1].lower() + message[1:]
    return f"archkit: {where}{message} (see `{path} -h`)"


class ArchkitGroup(TyperGroup):
    """The `archkit` group: usage errors print one line and exit 2 (click prints a 3-line block)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(USAGE_EXIT)
        except click.exceptions.UsageError as exc:
            typer.echo(usage_line(exc), err=True)
            sys.exit(USAGE_EXIT)
        except click.exceptions.ClickException as exc:
            typer.echo(f"archkit: {' '.join(exc.format_message().split())}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("archkit: aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)
