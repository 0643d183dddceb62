"""Printing helpers shared by commands: colour only on a terminal and without NO_COLOR; exit codes.

`EXIT_CODES` is the one place that maps archkit's error classes (archkit.errors) to exit codes;
commands raise `fail_for(exc)` or wrap their api call in `with archkit_errors():`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import typer

from archkit.diagnostics import Diagnostic, Severity
from archkit.errors import ArchkitError, InputError
from archkit.runbook.terminal import shown

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}


def use_colour(stream: TextIO | None = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") is not None or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, code: str) -> str:
    return f"{code}{text}\033[0m" if use_colour() else text


def diag_line(d: Diagnostic) -> str:
    # Spec text (an unknown key, a quoted value) may carry bidi overrides or ANSI escapes that
    # would make the line on the terminal differ from the file: show them escaped.
    line = shown(d.text())
    if use_colour():
        sev = d.severity.value
        line = line.replace(f" {sev} ", f" {_COLOURS[d.severity]}{sev}\033[0m ", 1)
    return line


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `archkit: message` to stderr and return the Exit to raise."""
    typer.echo(f"archkit: {message}", err=True)
    return typer.Exit(code)


# The one table from error class to exit code (first match wins): 2 for a usage or input problem
# (a spec that does not load, a missing file, an unknown environment or name, a bad option),
# 1 for a run that started and failed. Findings, drift and missed budgets are results, not
# errors: the commands exit 1 on them themselves. A load-test budget that is inconclusive (its
# percentile's confidence interval straddles it, or too few samples) is not missed: exit 0, or 1
# under `archkit loadtest --strict` (docs/loadtest.md).
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (InputError, 2),
    (ArchkitError, 1),
)


def exit_code(exc: BaseException) -> int:
    """The exit code for an error raised by archkit (EXIT_CODES; 1 for anything else)."""
    return next((code for cls, code in EXIT_CODES if isinstance(exc, cls)), 1)


def fail_for(exc: BaseException) -> typer.Exit:
    """`archkit: <the error's one line>` on stderr and the Exit with the error's code, to raise."""
    return fail(str(exc), exit_code(exc))


def refuse_existing(path: str | os.PathLike[str] | None) -> None:
    """Before any work: exit 2 (OutputExistsError) when an `-o` path is there already (a symlink too)."""
    from archkit.errors import OutputExistsError

    if path is not None and os.path.lexists(path):
        raise fail_for(OutputExistsError(str(path)))


def write_new(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write an `-o` file that must not exist yet, atomically: never over a user's file or symlink.

    The one answer of every command for "output exists": OutputExistsError, exit 2.
    """
    from archkit.atomic import create_atomic
    from archkit.errors import OutputExistsError

    try:
        create_atomic(path, text)
    except FileExistsError:
        raise fail_for(OutputExistsError(str(path))) from None
    except OSError as exc:
        raise fail(f"cannot write {path}: {exc.strerror or exc}", 2) from None


@contextmanager
def archkit_errors() -> Iterator[None]:
    """Turn any ArchkitError raised inside into its one-line message and exit code (no traceback)."""
    try:
        yield
    except ArchkitError as exc:
        raise fail_for(exc) from None


@contextmanager
def ticking(what: str, stream: TextIO | None = None) -> Iterator[None]:
    """`archkit: WHAT … N s` on stderr, redrawn in place, while the block runs longer than 1 s.

    Only on a terminal (quiet when stderr is a file or a pipe); the line is erased at the end.
    """
    err = stream or sys.stderr
    if not (hasattr(err, "isatty") and err.isatty()):
        yield
        return
    start = time.monotonic()
    done = threading.Event()
    shown = False

    def tick() -> None:
        nonlocal shown
        while not done.wait(0.25):
            elapsed = time.monotonic() - start
            if elapsed >= 1.0:
                err.write(f"\r\033[Karchkit: {what} … {elapsed:.0f} s")
                err.flush()
                shown = True

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown:
            err.write("\r\033[K")
            err.flush()
