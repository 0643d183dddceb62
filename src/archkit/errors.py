"""archkit's exceptions: one base class, and the few errors every entry point shares.

Every exception archkit raises on purpose derives from `ArchkitError`, so a caller (the CLI,
a notebook, a CI script) can catch one class and print `str(exc)`: it is always one line a
person can act on, naming the file and, where known, the line and field. Two families tell a
caller what kind of problem it is:

- `InputError`: the input cannot be used as given (a spec that does not load, a missing
  file, an unknown environment, an option that makes no sense). The CLI exits 2.
- everything else (`ArchkitError` directly): the run started but failed (a renderer crashed,
  Prometheus did not start). The CLI exits 1.

Findings, drift and missed budgets are not exceptions: they are results (`failed`, `passed`).
The one table from error class to exit code is `archkit.cli.output.EXIT_CODES`.

This module imports nothing from archkit but `diagnostics`, so every layer may raise these.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from archkit.diagnostics import Diagnostic, Severity


class ArchkitError(Exception):
    """Base of every error archkit raises on purpose; `str()` is one line for a person."""


class InputError(ArchkitError):
    """The input cannot be used as given: usage or input problem (CLI exit code 2)."""


class SpecLoadError(InputError):
    """A spec file that does not load; `diagnostics` holds every located finding of the loader."""

    def __init__(self, file: str, diagnostics: Sequence[Diagnostic]):
        self.file = file
        self.diagnostics = list(diagnostics)
        errors = [d for d in self.diagnostics if d.severity is Severity.ERROR] or self.diagnostics
        first = errors[0].text() if errors else f"{file}: cannot load the spec"
        more = (
            f" (and {len(errors) - 1} more error(s); `archkit check {file}` lists them)"
            if len(errors) > 1
            else ""
        )
        super().__init__(first + more)


class UnknownEnvironmentError(InputError):
    """`--env NAME` names an environment the spec does not define."""

    def __init__(self, file: str, env: str, known: Sequence[str]):
        self.file, self.env, self.known = file, env, list(known)
        super().__init__(
            f"{file}: environment '{env}' is not defined (environments: {', '.join(known) or 'none'})"
        )

    def diagnostic(self) -> Diagnostic:
        """The same problem as a located check finding (for `archkit check`'s report)."""
        return Diagnostic(
            "AK103",
            Severity.ERROR,
            f"environment '{self.env}' is not defined",
            self.file,
            1,
            1,
            "environments",
        )


class UnknownNameError(InputError, KeyError):
    """A name given on the command line (a generator, an example, a fault tree) that does not exist.

    Also a KeyError, so callers that looked a name up in a dict keep working; `str()` is the
    sentence, not KeyError's quoted repr.
    """

    def __init__(self, what: str, names: Sequence[str], known: Sequence[str]):
        self.what, self.names, self.known = what, list(names), list(known)
        super().__init__(f"unknown {what}: {', '.join(names)} (known: {', '.join(known) or 'none'})")

    def __str__(self) -> str:
        return str(self.args[0])


class OutputError(ArchkitError):
    """Generated files could not be written as asked (a path escapes the folder, a symlink, a foreign manifest)."""


class OutputExistsError(InputError, FileExistsError):
    """An output path (`-o FILE`) that is there already (a file, a symlink): never overwritten (exit 2).

    The path cannot be used as given, known before any work: an input problem like a missing
    spec, so every command answers it alike (`archkit.cli.output.write_new`).
    """

    def __init__(self, path: str):
        self.path = path
        super().__init__(f"{path} already exists; not overwriting it (choose another path or remove it)")


# The top-level modules each optional extra (pyproject.toml [project.optional-dependencies])
# brings that archkit imports; tests/packaging/test_bare_install.py holds the two in step.
EXTRAS: dict[str, tuple[str, ...]] = {
    "render": ("diagrams", "graphviz"),
    "load": ("locust", "gevent", "geventhttpclient", "tritonclient", "hdrh", "matplotlib"),
    "cluster": ("kubernetes", "urllib3"),
}


class MissingExtraError(InputError):
    """A command needs an optional extra that is not installed (exit 2, one line naming the extra)."""

    def __init__(self, what: str, extra: str, missing: Sequence[str]):
        self.what, self.extra, self.missing = what, extra, list(missing)
        super().__init__(
            f"{what} needs the '{extra}' extra (missing: {', '.join(missing)}): pip install 'archkit[{extra}]'"
        )


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True


def require_extra(what: str, extra: str) -> None:
    """Raise MissingExtraError unless every module of `extra` can be imported; imports none of them."""
    missing = [m for m in EXTRAS[extra] if _absent(m)]
    if missing:
        raise MissingExtraError(what, extra, missing)


class LoadtestError(InputError, ValueError):
    """A load test that cannot start: no loadtest section, a non-loopback host, missing payloads, bad options."""
