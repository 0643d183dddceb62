"""`archkit verify`: hold a cluster, Triton and Prometheus to the spec, read-only.

The sources are plug-ins (`archkit.verify.registry`): `verify_spec` reads every source the
options ask for and runs its checks; `run_inputs` does the same for inputs already read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from archkit.isolation import Failure, isolated
from archkit.spec import Spec, file_of
from archkit.verify.findings import Finding, Recorder, Status
from archkit.verify.registry import Providers, Reading, Source, sources
from archkit.verify.report import CODES, VerifyReport, to_json, to_junit, to_sarif, to_text
from archkit.verify.state import (
    ClusterState,
    StateError,
    load_manifests,
    load_snapshot,
    rbac_clusterrole,
    read_live,
)

__all__ = [
    "CODES",
    "ClusterState",
    "Finding",
    "StateError",
    "Status",
    "VerifyReport",
    "load_manifests",
    "load_snapshot",
    "rbac_clusterrole",
    "read_live",
    "run_inputs",
    "to_json",
    "to_junit",
    "to_sarif",
    "to_text",
    "verify_spec",
]


def run_inputs(spec: Spec, inputs: Mapping[str, Any], timeout_s: float = 10.0) -> VerifyReport:
    """Run the checks of every source with an input (source name -> what its `read` returned)."""
    report = VerifyReport(file_of(spec))
    for cls in sources():
        if cls.name not in inputs:
            continue
        # a broken source must not hide the others' findings (as a rule or a generator)
        reading = isolated("verify source", cls.name, partial(_check, cls, spec, inputs[cls.name], timeout_s))
        if isinstance(reading, Failure):
            reading = _broken(spec, cls, reading)
        report.sources.append(reading.entry)
        report.api_calls += reading.api_calls
        report.findings += reading.findings
    return report


def _check(cls: type[Source], spec: Spec, given: Any, timeout_s: float) -> Reading:
    return cls().check(spec, given, timeout_s)


def _broken(spec: Spec, cls: type[Source], failure: Failure) -> Reading:
    """A source whose checks raised: one unknown finding under its first code, naming the error."""
    rec = Recorder(spec, cls.name)
    codes = cls.codes()
    if not codes:
        raise failure.error
    rec.unknown(codes[0], f"source/{cls.name}", spec, failure.message)
    return Reading({"area": cls.name, "error": failure.message}, rec.findings)


def verify_spec(
    spec: Spec,
    options: Mapping[str, Any],
    timeout_s: float = 10.0,
    providers: Providers | None = None,
    default: bool = False,
) -> VerifyReport:
    """Read every source the options ask for and check it against the spec.

    With `default`, no source asked for means the default source with its default options
    (like kubectl, the current cluster). Raises `StateError` (or ValueError) when a source
    cannot be used at all.
    """
    opts = dict(options)
    chosen = [cls() for cls in sources() if cls().given(opts)]
    if not chosen and default:
        for cls in sources():
            if cls.default:
                chosen.append(cls())
                opts.update(cls.default_options)
    inputs = {src.name: src.read(spec, opts, timeout_s, providers or {}) for src in chosen}
    return run_inputs(spec, inputs, timeout_s)
