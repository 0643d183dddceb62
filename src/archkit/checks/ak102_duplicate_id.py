"""AK102: two objects share an id."""

from collections.abc import Iterator

from archkit.checks.common import id_namespaces
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import Node


@register
class DuplicateId(Rule):
    """Two objects of the same kind share an id, so references to it are ambiguous."""

    code = "AK102"
    name = "duplicate-id"
    source = "DESIGN.md: every cross-reference by id"
    rationale = """
Every diagram node, alert and runbook anchor is keyed by id; a duplicate makes one of them
silently disappear. The namespaces are those the model marks with `IdOf` (archkit.spec.refs).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for kind, members in id_namespaces(ctx.spec):
            first: dict[str, Node] = {}
            for oid, obj in members:
                if oid in first:
                    prev = ctx.source.at(first[oid].spec_path + ("id",))
                    yield ctx.at(
                        obj, "id", f"duplicate {kind} id '{oid}' (first defined on line {prev.line})"
                    )
                else:
                    first[oid] = obj
