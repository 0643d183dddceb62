"""A model's output contract per version (seed 004 §1): the fields it returns and the version it replaces.

Seed 004 §1's downstream business systems failed when a model update renamed a JSON field
(`confidence_score` -> `pred_confidence`) that no interface document had fixed. `model.contract`
declares the fields this version returns and those of the version it replaces; rule AK326 reports
a field dropped or retyped without a major version bump or an adapter that keeps the old shape.
"""

from __future__ import annotations

import re

from pydantic import Field

from archkit.spec.base import Node


class OutputField(Node):
    """One field of a model's output, as its consumers read it."""

    name: str = Field(min_length=1, max_length=256)
    type: str | None = Field(None, max_length=64, description="e.g. string, float32, int64[], object")


class ReplacedVersion(Node):
    """The model version this one replaces and the outputs its consumers were built against."""

    version: str = Field(min_length=1, max_length=128)
    outputs: list[OutputField] = Field(min_length=1, max_length=1024)
    adapter: str | None = Field(
        None,
        max_length=512,
        description="what still serves the old shape to old consumers, e.g. 'gateway maps pred_confidence "
        "to confidence_score'",
    )


class ModelContract(Node):
    """The outputs a model version returns and the version it replaces."""

    outputs: list[OutputField] = Field(default_factory=list, max_length=1024)
    replaces: ReplacedVersion | None = None


_LEADING = re.compile(r"^v?(\d+)(?:\.(\d+))?")


def major(version: str | None) -> int | None:
    """The major number of a semantic version ('v1.2.0' -> 1), None when it is not one."""
    m = _LEADING.match(version.strip()) if version else None
    return int(m.group(1)) if m and m.group(2) is not None else None
