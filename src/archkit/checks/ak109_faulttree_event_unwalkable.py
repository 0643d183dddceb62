"""AK109: a fault-tree leaf event cannot be walked: no check, no expectation, or a broken regex."""

import re
import warnings
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class FaultTreeEventUnwalkable(Rule):
    """A fault-tree leaf has no `check` command, no expectation to compare with, or an invalid `expect_regex`."""

    code = "AK109"
    name = "faulttree-event-unwalkable"
    severity = Severity.WARNING
    source = "seed 000 §3.4: every leaf carries a check command and its expected output"
    rationale = """
The runbook (`archkit runbook --run`) confirms an event when its check's output does not
match the expectation. A leaf without `check` cannot be run, one without `expect`,
`expect_regex` or `expect_exit_code` cannot be judged, and an invalid regular expression
stops the walk: at 3 a.m. the on-call engineer is left to guess.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for tree in ctx.spec.faulttrees:
            for e in tree.events:
                if not e.check:
                    yield ctx.at(e, "id", f"event '{e.id}' of tree '{tree.id}' has no check command")
                elif e.expect is None and e.expect_regex is None and e.expect_exit_code is None:
                    yield ctx.at(
                        e,
                        "check",
                        f"event '{e.id}' of tree '{tree.id}' has a check but no "
                        "expect, expect_regex or expect_exit_code to judge it by",
                    )
                if e.expect_regex is not None:
                    with warnings.catch_warnings(record=True) as caught:
                        # Python warns (FutureWarning) where a pattern's meaning will change,
                        # e.g. "[[" read as a nested set: a finding here, not a stray line
                        warnings.simplefilter("always")
                        re.purge()  # a cached pattern would not warn again
                        try:
                            re.compile(e.expect_regex)
                        except re.error as exc:
                            yield ctx.at(
                                e,
                                "expect_regex",
                                f"event '{e.id}': expect_regex does not compile: {exc}",
                                severity=Severity.ERROR,
                            )
                    for w in caught:
                        yield ctx.at(
                            e,
                            "expect_regex",
                            f"event '{e.id}': expect_regex may change meaning in a later Python "
                            f"({w.message}); escape a literal '[' or '-' as \\[ or \\-",
                        )
