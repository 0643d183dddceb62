"""A verify source as another package would ship it: importing the module registers it.

Loaded only by tests/verify/test_registry.py through an `archkit.verify_sources` entry point.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archkit.verify.findings import Recorder
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source


class NotesPresent(Check):
    """The spec's metadata carries a description."""

    code = Code("VY901", "notes present", "A service nobody described is hard to hand over.", "this test")


@register_source
class NotesSource(Source):
    """A stand-in for a third-party source: it reads nothing outside the spec."""

    name = "notes"
    title = "Notes"
    prefix = "VY"
    options = (Option("notes", "Check the spec's own notes.", bool, True),)
    docs = (DocRow("`--notes`", "the spec itself", "a test plug-in."),)
    checks = (NotesPresent,)

    def read(self, spec: Any, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return spec.metadata.description

    def check(self, spec: Any, given: Any, timeout_s: float) -> Reading:
        rec = Recorder(spec, self.name)
        (rec.ok if given else rec.drift)(
            NotesPresent.code, "metadata", spec.metadata, "described", field="description"
        )
        return Reading({"area": self.name, "source": "spec"}, rec.findings)
