"""The memory-growth signal (seed 000 §5.4): a long-running model server's memory must not creep.

Seed 000 §5.4 found PyTorch DataLoader workers (`num_workers=4`) holding memory that grew 12 MB an
hour until the process died. A leak that slow never trips a usage threshold within a day; its
slope over hours does. `golden_signals.memory_growth` names the process's memory series and the
growth it may show; the alert planner emits `MemoryGrowth` on `deriv(series[window])`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from archkit.spec.base import Node

# Half the seed's 12 MB/h, so that the leak it reports fires with margin whatever the noise.
DEFAULT_MB_PER_HOUR = 6.0


class MemoryGrowth(Node):
    """How fast a long-running server's memory may grow before it is a leak."""

    metric: str = Field(description="a memory gauge in bytes, e.g. process_resident_memory_bytes")
    labels: dict[str, str] = Field(default_factory=dict)
    max_mb_per_hour: Annotated[float, Field(gt=0, le=1_000_000)] = Field(
        DEFAULT_MB_PER_HOUR,
        description="growth (MB/h, 10^6 bytes) above which the alert fires; seed 000 §5.4 leaked 12",
    )
    window: str = Field(
        "6h",
        pattern=r"^([1-9][0-9]?h|[1-3]d)$",
        description="the slope's window: hours (1h-99h) or days (1d-3d); a leak shows over hours",
    )

    @property
    def window_min(self) -> int:
        n, unit = int(self.window[:-1]), self.window[-1]
        return n * (60 if unit == "h" else 1440)
