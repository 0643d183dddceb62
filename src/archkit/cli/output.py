"""Printing helpers shared by commands: colour only on a terminal and without NO_COLOR."""

from __future__ import annotations

import os
import sys

import typer

from archkit.diagnostics import Diagnostic, Severity

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}


def use_colour(stream=None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR") is not None or os.environ.get("TERM") == "dumb":
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def paint(text: str, code: str) -> str:
    return f"{code}{text}\033[0m" if use_colour() else text


def diag_line(d: Diagnostic) -> str:
    line = d.text()
    if use_colour():
        sev = d.severity.value
        line = line.replace(f" {sev} ", f" {_COLOURS[d.severity]}{sev}\033[0m ", 1)
    return line


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `archkit: message` to stderr and return the Exit to raise."""
    typer.echo(f"archkit: {message}", err=True)
    return typer.Exit(code)
