"""When each user may send: the closed-model pacer (a slot every 1/rate s) and the open-model one (a schedule).

Both run inside the gevent-patched load-generator process; a protocol's user calls
`pacer.acquire(user)` right before each request, and `take()` after it for the scheduled send
time its latency counts from (open model only).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gevent  # type: ignore[import-untyped]
from gevent.event import AsyncResult  # type: ignore[import-untyped]
from locust.exception import StopUser

from archkit.loadtest import hist


class Pacer:
    """Base: no pacing at all (every user sends as fast as answers come back)."""

    def __init__(self) -> None:
        self.closed = False  # set at the end of a measured run: no new requests, in-flight ones finish

    def start(self, t0: float) -> None:
        """The measured run starts now (monotonic t0): rates and schedules count from here."""

    def acquire(self, user: Any) -> None:
        """Block this user (cooperatively) until it may send; StopUser once the run is closed."""
        if self.closed:
            raise StopUser()

    def take(self) -> float | None:
        """The scheduled send time (monotonic) of the request this greenlet just finished, if any."""
        return None

    def close(self) -> None:
        """No new request leaves; those in flight finish."""
        self.closed = True


class ClosedPacer(Pacer):
    """Closed model: a send slot every 1/rate seconds, taken by the next free user.

    Each user takes the next free slot just before it sends, so a rate change applies at once
    (stress steps) and users spawned together do not fire together. Slots that pass while every
    user is busy are dropped, not made up later in a burst: the users bound the concurrency, and
    the offered rate is reached only while users >= rate x latency. In distributed mode each
    process sends its share: rate x (its users / all users).
    """

    POLL_S = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.rate_rps = 0.0  # requests/s over all users together; 0 = no pacing
        self.users = 1  # users over all processes (in distributed mode too)
        self.steps: list[tuple[float, float]] = []  # (from second, rate) for stress levels
        self.t0: float | None = None
        self.next_slot = 0.0

    def configure(
        self, rate_rps: float | None, users: int, steps: Sequence[tuple[float, float]] = ()
    ) -> None:
        self.rate_rps, self.users, self.steps = float(rate_rps or 0), max(1, int(users)), list(steps)
        self.t0 = None

    def start(self, t0: float) -> None:
        self.t0 = t0

    def current_rate(self) -> float:
        if self.t0 is None:
            self.t0 = time.monotonic()
        rate = self.rate_rps
        elapsed = time.monotonic() - self.t0
        for start_s, step_rate in self.steps:
            if elapsed >= start_s:
                rate = step_rate
        return rate

    def acquire(self, user: Any) -> None:
        while True:
            if self.closed:
                raise StopUser()
            rate = self.current_rate()
            if not rate or rate <= 0:
                return
            runner = user.environment.runner
            local = getattr(runner, "user_count", 0) or self.users
            local_rate = rate * min(1.0, local / self.users)
            now = time.monotonic()
            slot = max(self.next_slot, now)
            if slot - now <= self.POLL_S:
                self.next_slot = slot + 1.0 / local_rate
                if slot > now:
                    time.sleep(slot - now)
                return
            time.sleep(min(slot - now - self.POLL_S, self.POLL_S))


class OpenPacer(Pacer):
    """Open model: requests leave at their scheduled times, whatever is in flight.

    The users are the declared maximum in flight: a free user waits in `acquire` until the
    scheduler hands it a send time. A scheduled time that finds every user busy is a dropped
    request (counted, never skipped silently).
    """

    def __init__(self, on_sent: Callable[[], None], on_drop: Callable[[], None]) -> None:
        super().__init__()
        self.on_sent, self.on_drop = on_sent, on_drop
        self.free: deque[tuple[Any, Any]] = deque()  # (greenlet, AsyncResult) of each waiting user
        self.sched: dict[Any, float] = {}  # greenlet -> its request's scheduled time (monotonic)
        self.released = False
        self.handed = 0
        self.dropped = 0
        self.lag = hist.new()  # actual send - scheduled send

    def acquire(self, user: Any) -> None:
        # After the end a user parks here until the runner stops it: a user stopping by itself
        # (StopUser) runs locust's bookkeeping while other answers are still due.
        if self.released:  # a user that finished after release(): nobody would ever wake it
            raise StopUser()
        ar = AsyncResult()
        me = gevent.getcurrent()
        self.free.append((me, ar))  # after close() only release() sets it
        due = ar.get()
        if due is None:
            raise StopUser()
        self.sched[me] = due
        hist.record_ms(self.lag, max((time.monotonic() - due) * 1000.0, 0.001))

    def take(self) -> float | None:
        return self.sched.pop(gevent.getcurrent(), None)

    def run(self, times: Iterable[float], t0: float) -> None:
        """Hand each scheduled time (seconds from t0) to a free user, or count it dropped."""
        for t in times:
            due = t0 + t
            wait = due - time.monotonic()
            # behind schedule: still yield, so users that just finished can queue up again
            gevent.sleep(wait if wait > 0 else 0)
            if self.closed:
                return
            while self.free and self.free[0][0].dead:
                self.free.popleft()
            if self.free:
                self.free.popleft()[1].set(due)
                self.handed += 1
                self.on_sent()
            else:
                self.dropped += 1
                self.on_drop()

    def release(self) -> None:
        """Let every parked user stop (StopUser), once nothing is in flight any more."""
        self.closed = self.released = True
        while self.free:
            self.free.popleft()[1].set(None)

    def drain(self, limit_s: float) -> None:
        """Wait (at most limit_s) for the requests in flight: stopping the runner blocks the loop,
        and a response that arrives meanwhile would be timed late."""
        end = time.monotonic() + limit_s
        while time.monotonic() < end and any(not g.dead for g in self.sched):
            gevent.sleep(0.005)
