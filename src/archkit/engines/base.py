"""The adapter value: endpoints and the measure -> metric-series table of one serving engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from archkit.errors import InputError

MetricKind = Literal["counter", "gauge", "histogram", "summary", "info"]


class UnknownEngineError(InputError):
    """An engine name that no adapter registers."""


class UnknownMeasureError(InputError):
    """A measure that an engine's adapter does not expose."""


def _version_key(version: str) -> tuple[int, ...]:
    """'0.10.1' -> (0, 10, 1); non-numeric parts count as 0 so a tag like 'v1rc1' still orders."""
    parts = []
    for part in version.lstrip("v").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


@dataclass(frozen=True)
class Metric:
    """One series an engine exposes: its name, kind, unit and the versions that spell it so."""

    name: str
    kind: MetricKind
    unit: str = "1"  # "seconds", "microseconds", "ratio", "bytes", "tokens", "1"
    labels: tuple[str, ...] = ()  # labels that identify the model or instance, e.g. ("model",)
    since: str | None = None  # first engine version with this name (inclusive)
    until: str | None = None  # first engine version that no longer has it (exclusive)
    help: str = ""
    # A request counter that counts successes only (Triton's `nv_inference_request_success`):
    # an error ratio over it needs successes + failures as its denominator.
    success_only: bool = False

    def valid_in(self, version: str | None) -> bool:
        """Whether the series carries this name in `version` (None: the newest name)."""
        if version is None:
            return self.until is None
        key = _version_key(version)
        if self.since is not None and key < _version_key(self.since):
            return False
        return not (self.until is not None and key >= _version_key(self.until))


@dataclass(frozen=True)
class Endpoints:
    """HTTP paths of an engine's server; None where the engine has no such endpoint."""

    ready: str | None = None
    live: str | None = None
    metrics: str | None = "/metrics"
    models: str | None = None
    model_config: str | None = None  # may contain "{model}"
    model_stats: str | None = None  # may contain "{model}"
    infer: str | None = None  # one inference request; may contain "{model}"
    model_ready: str | None = None  # 200 when the model is loaded; may contain "{model}"
    model_version_ready: str | None = None  # the same for one version: "{model}" and "{version}"
    model_version_metadata: str | None = None  # one version's metadata: "{model}" and "{version}"
    extra: Mapping[str, str] = field(default_factory=dict)  # engine-specific, e.g. {"slots": "/slots"}


@dataclass(frozen=True)
class EngineAdapter:
    """How one serving engine is observed. `measures` maps a measure to its series, newest last."""

    name: str
    title: str
    endpoints: Endpoints
    measures: Mapping[str, tuple[Metric, ...]]
    model_label: str | None = "model"  # the label that names the model on per-model series
    source: str = ""  # where the names come from (the engine's documentation page)

    def metric(self, measure: str, version: str | None = None) -> Metric:
        """The series for `measure` in engine `version` (None: the current name)."""
        candidates = self.measures.get(measure)
        if not candidates:
            known = ", ".join(sorted(self.measures))
            raise UnknownMeasureError(
                f"engine {self.name!r} exposes no measure {measure!r} (it has: {known})"
            )
        for m in reversed(candidates):
            if m.valid_in(version):
                return m
        raise UnknownMeasureError(f"engine {self.name!r} version {version} has no series for {measure!r}")

    def has(self, measure: str) -> bool:
        """Whether the engine exposes `measure` at all."""
        return bool(self.measures.get(measure))

    def series(self, name: str) -> Metric | None:
        """The series this engine exposes under `name` (any version), or None."""
        for metrics in self.measures.values():
            for m in metrics:
                if m.name == name:
                    return m
        return None

    def all_names(self, measure: str) -> tuple[str, ...]:
        """Every name `measure` has carried across versions, oldest first (for version-agnostic reads)."""
        return tuple(m.name for m in self.measures.get(measure, ()))
