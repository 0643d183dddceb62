"""AK102: two objects share an id."""

from archkit.checks.common import id_namespaces
from archkit.checks.registry import Rule, register


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

    def check(self, ctx):
        for kind, members in id_namespaces(ctx.spec):
            first: dict[str, object] = {}
            for obj in members:
                if obj.id in first:
                    prev = ctx.source.at(first[obj.id].spec_path + ("id",))
                    yield ctx.at(
                        obj, "id", f"duplicate {kind} id '{obj.id}' (first defined on line {prev.line})"
                    )
                else:
                    first[obj.id] = obj
