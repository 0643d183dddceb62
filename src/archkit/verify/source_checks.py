"""What the checks of one network source share: the spec, the recorder, and the guard around each check.

A check is a small `Check` subclass whose `run(ctx, target)` reports with its own class's codes;
a source's procedural part only reads its input and loops over its checks. The guard (the one
plug-in guard, `archkit.isolation`) makes a check that trips over a malformed answer one
*unknown* finding under that check's code, and the checks after it still run (as the
Kubernetes source does per object). Transport errors are not caught here: each source turns
them into its own "stopped answering" finding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from archkit.isolation import MALFORMED, Failure, isolated
from archkit.spec.model import Spec
from archkit.verify.findings import Code, Recorder

T = TypeVar("T")


class SourceContext:
    """The spec and the recorder shared by one run of a source's checks."""

    source_title = "the source"  # how findings name the server, e.g. "Triton"

    def __init__(self, spec: Spec, area: str):
        self.spec = spec
        self.rec = Recorder(spec, area)

    def guarded(
        self,
        code: Code,
        label: str,
        node: object,
        run: Callable[[], T],
        *,
        field: str | None = None,
    ) -> T | None:
        """`run()`, or None and an unknown finding under `code` when the answer it reads is malformed."""
        done = isolated("verify check", code.id, run, catch=MALFORMED)
        if not isinstance(done, Failure):
            return done
        self.rec.unknown(
            code,
            label,
            node,
            f"cannot check {label} ({code.title}): {self.source_title} answered something malformed "
            f"({done.detail})",
            field=field,
        )
        return None
