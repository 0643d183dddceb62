"""AK101: a value does not fit the archkit/v1 schema."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class SchemaViolation(Rule):
    """A key is unknown, a required field is missing, or a value has the wrong type or range."""

    code = "AK101"
    name = "schema"
    source = "design principle D2 (docs/sources.md): units in key names; unknown keys are errors"
    rationale = """
Reported by the loader when the document does not match the archkit/v1 JSON Schema
(`archkit schema`). Unknown keys are errors with a "did you mean" suggestion, because a
misspelled `p99_ms` silently dropped is a budget nobody enforces.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        yield from ()  # the loader reports these before any rule runs
