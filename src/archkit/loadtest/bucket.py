"""Counts and exact histograms of some requests: recorded in a worker, shipped as a `Window`, merged in the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from archkit.loadtest import hist
from archkit.loadtest.measures import load_all
from archkit.loadtest.messages import Window


@dataclass
class Bucket:
    """Merged counts and histograms of some requests (a second, a phase, a scenario, the run)."""

    requests: int = 0
    errors: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    latency: Any = field(default_factory=hist.new)  # open model: from the scheduled send time
    error_latency: Any = field(default_factory=hist.new)
    from_send: Any = field(default_factory=hist.new)  # open model: from the actual send time
    messages: dict[str, int] = field(default_factory=dict)
    dropped: int = 0  # open model: scheduled requests that found every in-flight slot taken
    sent: int = 0  # open model: requests that left in this stretch of time
    measures: dict[str, Any] = field(default_factory=dict)  # measure name -> merged histogram
    totals: dict[str, int] = field(default_factory=dict)  # the measures' summed counters

    def add(self, w: Window) -> None:
        """Merge what one process counted."""
        self.requests += w.requests
        self.errors += w.errors
        self.dropped += w.dropped
        self.sent += w.sent
        for k, v in w.statuses.items():
            self.statuses[k] = self.statuses.get(k, 0) + v
        for mine, text in (
            (self.latency, w.latency),
            (self.error_latency, w.error_latency),
            (self.from_send, w.from_send),
        ):
            if text:
                mine.add(hist.decode(text))
        for name, text in w.measures.items():
            self.measures.setdefault(name, hist.new()).add(hist.decode(text))
        self.count(w.totals, w.messages)

    def count(self, totals: dict[str, int], messages: dict[str, int]) -> None:
        for k, n in totals.items():
            self.totals[k] = self.totals.get(k, 0) + n
        for k, n in messages.items():
            self.messages[k] = self.messages.get(k, 0) + n

    def window(self) -> Window:
        """What a worker process sends of these requests (histograms as text)."""
        return Window(
            requests=self.requests,
            errors=self.errors,
            statuses=dict(self.statuses),
            latency=hist.encode(self.latency),
            error_latency=hist.encode(self.error_latency),
            from_send=hist.encode(self.from_send) if self.from_send.get_total_count() else "",
            dropped=self.dropped,
            sent=self.sent,
            measures={k: hist.encode(h) for k, h in sorted(self.measures.items()) if h.get_total_count()},
            totals=dict(sorted(self.totals.items())),
            messages=dict(self.messages),
        )

    def merge(self, other: Bucket) -> None:
        """Add another merged bucket (a scenario into the run's total)."""
        self.requests += other.requests
        self.errors += other.errors
        for k, v in other.statuses.items():
            self.statuses[k] = self.statuses.get(k, 0) + v
        self.latency.add(other.latency)
        self.error_latency.add(other.error_latency)
        self.from_send.add(other.from_send)
        for name, h in other.measures.items():
            self.measures.setdefault(name, hist.new()).add(h)
        self.count(other.totals, other.messages)

    def stats(self, seconds: float | None = None) -> dict:
        # a dropped request is a failed one: the service could not take it when it was due
        failed, offered = self.errors + self.dropped, self.requests + self.dropped
        out: dict[str, Any] = {
            "requests": self.requests,
            "errors": self.errors,
            "error_rate": round(failed / offered, 6) if offered else None,
            "statuses": dict(sorted(self.statuses.items())),
        }
        if self.dropped:
            out["dropped"] = self.dropped
        out.update({k: v for k, v in hist.summary(self.latency).items() if k != "count"})
        if self.latency.get_total_count():  # what each percentile's verdict needs: n and its interval
            out["ci"] = hist.intervals(self.latency)
        if self.from_send.get_total_count():
            out["from_send"] = {k: v for k, v in hist.summary(self.from_send).items() if k != "count"}
        if self.errors:
            out["error_latency"] = {k: v for k, v in hist.summary(self.error_latency).items() if k != "count"}
        if seconds:
            out["throughput_rps"] = round((self.requests - self.errors) / seconds, 3)
            out["request_rate_rps"] = round(self.requests / seconds, 3)
        measures = measure_stats(self.measures, self.totals)
        if measures:
            out["measures"] = measures
        return out


def measure_stats(hists: dict[str, Any], totals: dict[str, int]) -> dict[str, dict]:
    """Each registered measure's summary, for the measures that recorded something."""
    out: dict[str, dict] = {}
    for name, m in sorted(load_all().items()):
        h = hists.get(name)
        recorded = h is not None and h.get_total_count()
        if recorded or any(totals.get(k) for k in m.counters):
            out[name] = m.summary(h if h is not None else hist.new(), totals)
    return out
