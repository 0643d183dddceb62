"""Per-request measures beyond latency: each one module, registered by name (e.g. time to first token).

A measure turns one request's `Sample` (what its protocol observed) into values for an HDR
histogram and, optionally, counters summed over requests. The worker records every registered
measure per scenario, second and phase; the runner merges them and reports each measure's
summary under `measures` in the statistics. Adding one: a module with a `Measure` subclass
under `@register_measure`, listed in `BUILTIN` or, from another distribution, named by an entry
point in the `archkit.load_measures` group (`NAME = package.module`), plus its test.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from archkit.loadtest.measures.base import (
    MEASURES,
    STREAM_KEY,
    Measure,
    MeasureError,
    Sample,
    StreamTrace,
    register_measure,
)

BUILTIN = ("archkit.loadtest.measures.stream", "archkit.loadtest.measures.server_timings")
ENTRY_POINTS = "archkit.load_measures"


def load_all() -> dict[str, Measure]:
    """Every measure, built-in and plug-in, registered (importing a module registers its measures)."""
    for name in BUILTIN:
        importlib.import_module(name)
    for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        ep.load()
    return MEASURES


__all__ = [
    "BUILTIN",
    "ENTRY_POINTS",
    "MEASURES",
    "STREAM_KEY",
    "Measure",
    "MeasureError",
    "Sample",
    "StreamTrace",
    "load_all",
    "register_measure",
]
