"""AK611: the service logs at DEBUG level."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class DebugLogging(Rule):
    """The log policy's level is DEBUG, which buries the errors on-call looks for."""

    code = "AK611"
    name = "debug-logging"
    severity = Severity.WARNING
    source = "seed 000 §5.2 (90 % of an AI service's log lines were INFO 'forward pass completed'; the log node is marked log_level=INFO)"
    rationale = """
Seed 000 §5.2 sets the meanings of the levels: DEBUG for CUDA-kernel detail, only while
debugging; INFO for the request id, input shape and output class; WARN for missing features
and low confidence; ERROR only for unrecoverable faults such as CUDA out of memory. The log
service on the diagram is marked `log_level=INFO`, or on-call searches for the ERROR among
millions of lines. A production spec at DEBUG is flagged.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        log = ctx.spec.observability.logging
        if log is not None and log.level == "DEBUG":
            yield ctx.at(log, "level", "logs at DEBUG: production logs at INFO (DEBUG only while debugging)")
