"""Per-batch service time of a model: a table of measured batch sizes, linearly interpolated.

Its own module so that the analytic batching model and the simulations can both use it
without importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TimingPoint:
    """Service time of one batch of `batch_size` items, in milliseconds."""

    batch_size: int
    total_ms: float


class ServiceTable:
    """Per-batch service time, linearly interpolated between measured batch sizes."""

    def __init__(self, points: Iterable[TimingPoint | tuple[int, float]]) -> None:
        pts: dict[int, float] = {}
        for p in points:
            b, t = (p.batch_size, p.total_ms) if isinstance(p, TimingPoint) else p
            pts[int(b)] = float(t)
        if not pts:
            raise ValueError("a service-time table needs at least one batch size")
        self.points: tuple[tuple[int, float], ...] = tuple(sorted(pts.items()))

    # Equal tables are interchangeable: the analyses memoise on them (a spec whose stages share
    # a model, or a fuzzed spec with a stage copied 100 times, pays for each table once).
    def __eq__(self, other: object) -> bool:
        return isinstance(other, ServiceTable) and self.points == other.points

    def __hash__(self) -> int:
        return hash(self.points)

    @property
    def largest(self) -> int:
        return self.points[-1][0]

    def extrapolated(self, batch_size: float) -> bool:
        """True when `batch_size` lies outside the measured sizes."""
        return batch_size > self.largest or batch_size < self.points[0][0]

    def ms(self, batch_size: float) -> float:
        """Service time (ms) of one batch of `batch_size` items (fractional sizes allowed)."""
        pts = self.points
        if len(pts) == 1:
            # one measurement: assume the per-item cost stays the same (conservative)
            b0, t0 = pts[0]
            return t0 * max(batch_size, 1) / b0 if batch_size > b0 else t0
        if batch_size <= pts[0][0]:
            return pts[0][1]
        for (b0, t0), (b1, t1) in zip(pts, pts[1:], strict=False):
            if batch_size <= b1:
                return t0 + (t1 - t0) * (batch_size - b0) / (b1 - b0)
        (b0, t0), (b1, t1) = pts[-2], pts[-1]
        slope = max((t1 - t0) / (b1 - b0), 0.0)
        return t1 + slope * (batch_size - b1)
