"""AK328: a model's artefact path does not name its version."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


def segments(path: str) -> list[str]:
    """The path's segments (split on / and the URI's : and @), lower-case."""
    return [p for p in re.split(r"[/:@]+", path.lower()) if p]


def names_version(path: str, version: str) -> bool:
    """Whether one segment of `path` is the version, with or without a leading 'v'."""
    want = version.strip().lower().removeprefix("v")
    return any(p.removeprefix("v") == want for p in segments(path))


def names_latest(path: str) -> bool:
    """Whether a segment is 'latest' or a file named latest (seed 000 §5.1's latest.pt)."""
    return any(p == "latest" or p.startswith("latest.") for p in segments(path))


@register
class ModelArtifactUnversioned(Rule):
    """A model's `artifact` path names `latest` or does not contain the model's version."""

    code = "AK328"
    name = "model-artifact-unversioned"
    severity = Severity.WARNING
    source = "seed 004 §4.1 (MinIO versioned buckets: s3://models/ocr/v1.2.0/model.onnx); seed 000 §5.1, §2.2"
    rationale = """
Seed 004 §4.1 keeps every model version under its own path in a versioned bucket
(`s3://models/ocr/v1.2.0/model.onnx`, with its config and requirements beside it); the
deployment downloads that version and checks its SHA-256 before loading, and rolling back is
changing one variable. Seed 000 §5.1's service went down when `latest.pt` was overwritten in
place. A model's `artifact` must therefore name its `version` as one path segment (`v`
optional) and never `latest`: the path then says which files the hash (AK311) belongs to.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or not m.artifact:
                continue
            if names_latest(m.artifact):
                yield ctx.at(
                    m,
                    "artifact",
                    f"model '{m.name}' of stage '{st.id}' loads from '{m.artifact}': 'latest' is overwritten "
                    "in place (seed 000 §5.1); point at the version's own path",
                )
            elif m.version and not names_version(m.artifact, m.version):
                yield ctx.at(
                    m,
                    "artifact",
                    f"model '{m.name}' {m.version} of stage '{st.id}' loads from '{m.artifact}', which does not "
                    "name that version (seed 004 §4.1: s3://models/<model>/<version>/...)",
                )
