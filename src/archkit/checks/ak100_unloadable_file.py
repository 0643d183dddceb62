"""AK100: the file cannot be read or parsed as YAML."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class UnloadableFile(Rule):
    """The file cannot be read or is not valid, safe YAML."""

    code = "AK100"
    name = "load-error"
    source = "design principle D1 (docs/sources.md): errors name file, line, column and field path"
    rationale = """
Reported by the loader before any rule runs: file missing or unreadable, over the size cap,
not UTF-8, a YAML syntax error, a duplicate key, a YAML tag that would construct objects,
or an alias expansion bomb. The message gives the line and column of the problem.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        yield from ()  # the loader reports these before any rule runs
