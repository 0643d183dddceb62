"""AK607: an SLO event matcher is not valid PromQL (a regex that RE2 rejects, a bad label name)."""

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.slo_math import re2_error

LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@register
class SloBadMatcher(Rule):
    """A `=~`/`!~` matcher whose regex does not compile as RE2, or a matcher on an invalid label."""

    code = "AK607"
    name = "slo-bad-matcher"
    severity = Severity.ERROR
    source = "seed 000 §4.3 (alerts that silently match nothing watch nothing); Prometheus matchers are anchored RE2 regexes"
    rationale = """
Prometheus compiles `=~` and `!~` matchers with Go's RE2 syntax, anchored at both ends:
look-arounds and back-references are rejected when the rules load, and a typo such as an
unclosed group makes every rule of the file fail. A label name must match
[a-zA-Z_][a-zA-Z0-9_]*; names starting with `__` are reserved.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for slo in ctx.spec.slos or []:
            for events in (slo.good, slo.bad, slo.total):
                if events is None:
                    continue
                for m in events.matchers:
                    if not LABEL.match(m.label) or m.label.startswith("__"):
                        yield ctx.at(m, "label", f"SLO '{slo.name}': {m.label!r} is not a label name")
                    elif m.op in ("=~", "!~"):
                        why = re2_error(m.value)
                        if why:
                            yield ctx.at(
                                m,
                                "value",
                                f"SLO '{slo.name}': {m.label}{m.op}{m.value!r} is not an RE2 regex: {why}",
                            )
