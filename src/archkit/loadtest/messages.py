"""The typed messages a load-generator process streams to the runner, one JSON object per line.

- `Started` when users start;
- `Tick` each second (`Window`: that second's requests);
- `PhaseEnd` at the end of each offered-rate phase;
- `Final` with a `Window` per scenario, why it stopped, its CPU time and the open-model counts;
- `Failure` when it cannot run at all.

Histograms travel as text (`archkit.loadtest.hist.encode`); the runner merges them exactly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


@dataclass
class Window:
    """What one process counted over some requests (a second, a phase, a scenario)."""

    requests: int = 0
    errors: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    latency: str = ""  # HDR: every request; open model: from the scheduled send time
    error_latency: str = ""  # HDR: the failed ones
    from_send: str = ""  # HDR, open model: from the actual send time
    dropped: int = 0  # open model: scheduled requests that found every in-flight slot busy
    sent: int = 0  # open model: requests that left in this window
    measures: dict[str, str] = field(default_factory=dict)  # measure name -> HDR (archkit.loadtest.measures)
    totals: dict[str, int] = field(default_factory=dict)  # summed per-request counters of the measures
    messages: dict[str, int] = field(default_factory=dict)  # error message -> count (scenarios only)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Window:
        names = {f.name for f in fields(cls)}
        w = cls(**{k: v for k, v in d.items() if k in names})
        w.statuses = {str(k): int(v) for k, v in w.statuses.items()}
        return w


@dataclass
class OpenCounts:
    """Open model: what the schedule asked of this process and what it did."""

    arrival: str
    scheduled: list[int]  # per phase
    handed: int
    dropped: int
    lag: str  # HDR of actual − scheduled send time
    max_inflight: int


@dataclass
class Message:
    """Base of every message; `kind` names it on the wire."""

    kind: ClassVar[str] = ""

    def to_line(self) -> str:
        return json.dumps({"ev": self.kind, **asdict(self)}, separators=(",", ":")) + "\n"


@dataclass
class Started(Message):
    kind: ClassVar[str] = "started"


@dataclass
class Tick(Message):
    kind: ClassVar[str] = "tick"
    second: int
    window: Window
    users: int
    rate: float | None


@dataclass
class PhaseEnd(Message):
    kind: ClassVar[str] = "phase"
    index: int
    rate: float | None
    window: Window


@dataclass
class Final(Message):
    kind: ClassVar[str] = "final"
    stopped: str
    scenarios: dict[str, Window] = field(default_factory=dict)
    cpu_s: float = 0.0
    wall_s: float = 0.0
    open: OpenCounts | None = None
    recording: bool = True  # False: a master's final (its workers record the requests)


@dataclass
class Failure(Message):
    kind: ClassVar[str] = "error"
    message: str


@dataclass
class Eof(Message):
    """Not sent: the runner's reader puts it on its queue when a process's output ends."""

    kind: ClassVar[str] = "eof"


def decode(line: str) -> Message | None:
    """The message on one output line, or None for a line that is not one (a stray print)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        d = json.loads(line)
    except ValueError:
        return None
    kind = d.pop("ev", None)
    if kind == "started":
        return Started()
    if kind == "tick":
        return Tick(d["second"], Window.from_json(d["window"]), d["users"], d["rate"])
    if kind == "phase":
        return PhaseEnd(d["index"], d["rate"], Window.from_json(d["window"]))
    if kind == "final":
        op = d.get("open")
        return Final(
            stopped=d["stopped"],
            scenarios={k: Window.from_json(v) for k, v in d.get("scenarios", {}).items()},
            cpu_s=d.get("cpu_s", 0.0),
            wall_s=d.get("wall_s", 0.0),
            open=OpenCounts(**op) if op else None,
            recording=d.get("recording", True),
        )
    if kind == "error":
        return Failure(d["message"])
    return None
