"""AK103: a reference names an id that does not exist."""

import difflib
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.refs import refs_of


@register
class DanglingReference(Rule):
    """A reference (edge, service pool, call target, fault-tree input, ...) names no existing object."""

    code = "AK103"
    name = "dangling-reference"
    source = "DESIGN.md: every cross-reference by id"
    rationale = """
Edges must join stages, services must sit on declared pools, calls must target stages or
services, fault trees must belong to services and gates must have existing inputs. A
dangling reference means a diagram with a missing box and a check that cannot run. Every
field the model marks with `RefTo` (archkit.spec.refs) is checked, so a new section with
references is checked without an edit here.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for ref, known in refs_of(ctx.spec).dangling():
            close = difflib.get_close_matches(ref.value, sorted(known), n=1)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else (f"known: {', '.join(sorted(known))}" if known and len(known) <= 8 else "")
            )
            yield ctx.at(ref.path, None, f"{ref.to.label} '{ref.value}' is not defined", hint=hint)
