"""Service models: what a stage's server does with the work that reaches it, one module each.

A service model answers, for the stages it serves, the questions every prediction asks:
- `demand`: its service time per item under load, its servers per replica, the batch it
  forms, whether it runs on a shared processor (the demand model, `archkit.perf.resources`);
- `step`: its parameters in the whole-pipeline simulation (`archkit.perf.pipesim`), including
  its admission limit (the calls a replica's queue holds before it refuses one);
- `handler`: the simulation's event-loop handler that forms the work a free server takes
  (`take`), says how long it runs (`work`) and how many calls a visit sends (`calls`),
  written in the subset of Python numba compiles (`archkit.perf.pipesim_kernel`);
- `predict`: the closed-form latency of one stage at an arrival rate (the analytic model).
Built in: the Triton dynamic batcher (`dynamic_batcher`), the worker pool (`worker_pool`) and an
LLM engine's continuous batcher (`continuous_batcher`, co-simulated through `visits`).
`model_for(stage)` picks the first registered model that `applies` (latest registration
first, so a plug-in can take over a kind of stage). Adding one: a module with a
`ServiceModel` subclass under `@register` and, when it batches or schedules differently
from the built-in handlers, a `Handler` of its own (docs/development.md).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from archkit.spec.model import Spec, Stage


@dataclass
class Step:
    """One stage as the simulation sees it, compiled into plain numbers."""

    index: int  # position of the stage in the spec
    stage: str
    handler: int  # the event-loop handler's slot (`Handler.slot`)
    resource: int  # -1: unconstrained
    replicas: int
    servers: int  # per replica; 0: unbounded
    routing: int
    batch: int  # items a server takes at most at once
    delay_s: float  # how long a short batch may wait for more (a batcher's max queue delay)
    max_queue: int  # admission limit: calls a replica's queue holds; 0: unbounded
    items_mean: float
    items_per_call: int
    # a measured fan-out (`stage.fanout.table`): [items, calls, weight] rows a visit is drawn from,
    # its calls overriding the handler's split; empty: `items_mean` items split by the handler
    fanout: list[tuple[int, int, float]] = field(default_factory=list)
    batch_s: list[float] = field(default_factory=list)  # processor time of a batch of n items, n = 0..batch
    over_s: list[float] = field(default_factory=list)  # host-side overhead after it (a model on a GPU)
    p50_s: float = 0.0
    sigma: float = 0.0
    dist: str = "lognormal"
    timeout_s: float = 0.0
    retries: int = 0
    backoff_s: float = 0.0
    backoff_mult: float = 1.0
    fallback: bool = False  # a failed visit ends the request at a fallback that still answers
    cosim: bool = False  # its model's `visits` gives each visit's latency (the loop's work draws are 0)

    @property
    def tabled(self) -> bool:
        """Whether its work comes from the per-batch table (else from per-visit draws)."""
        return bool(self.batch_s)


@dataclass(frozen=True)
class Demand:
    """What a stage asks of its servers and processor under load (`resources.load_model`)."""

    kind: str  # "model" (a batcher and instances), "worker" (a pool of workers), "delay"
    batch_items: int  # items in a batch under load
    servers_per_replica: int | None  # None: unbounded
    item_s: float  # processor time per item under load (s)
    hold_s: float  # time a server is held per item (s)
    on_processor: bool  # its work runs on a shared processor (cores or GPUs), not as a delay


@dataclass(frozen=True)
class StageLatency:
    """The closed-form prediction of one stage at one arrival rate (ms; ∞ when overloaded)."""

    arrival_rps: float
    servers: int
    rho: float
    wait_mean_ms: float
    wait_p99_ms: float
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class Visits:
    """A co-simulated stage's visits (`ServiceModel.visits`), in the order of their arrival times."""

    latency_s: np.ndarray  # each visit's time in the stage (s): its work in the second pass
    # a streaming stage's time to its first output (an LLM engine's TTFT, s), or None
    first_s: np.ndarray | None = None
    work: int = 0  # what its simulation spent, in the pipeline's unit of work (simulated events)
    # False where the work budget stopped before the visit's answer (its latency is NaN): the
    # pipeline counts that request as cut short, never as answered in 0 s; None: every visit answered
    answered: np.ndarray | None = None
    cut: str | None = None  # what the budget cut short, in words, when it did


@dataclass(frozen=True)
class Handler:
    """An event-loop handler: plain functions in the subset of Python that numba compiles.

    calls(k_items, items_per_call) -> (calls, items per call, items): how a visit of k items splits;
    take(head, c_next, c_items, c_enq, batch, delay_s, now) -> (last, count, items, wait_until):
      the calls a free server takes from its replica's FIFO queue starting at `head` (linked
      by `c_next`), or wait_until > now to take nothing until then (a batch still filling);
    work(step, items, first, batch_s, c_work) -> s: how long that work runs.
    """

    slot: int
    name: str
    calls: Callable[..., Any]
    take: Callable[..., Any]
    work: Callable[..., Any]


class ServiceModel(ABC):
    """How a stage's server serves: its service time, batching or scheduling, resource, admission."""

    name: ClassVar[str]
    handler: ClassVar[Handler]

    @classmethod
    @abstractmethod
    def applies(cls, stage: Stage) -> bool:
        """Whether this model serves `stage`."""

    @abstractmethod
    def demand(self, spec: Spec, stage: Stage) -> Demand:
        """Service time per item, servers and batch under load (the demand model)."""

    @abstractmethod
    def step(self, spec: Spec, stage: Stage, common: dict[str, Any]) -> Step | None:
        """The simulation's view of the stage (`common`: routing, replicas, retries...), or None
        when it does nothing the simulation must model (no service time)."""

    @abstractmethod
    def predict(self, spec: Spec, stage: Stage, arrival_rps: float, replicas: int) -> StageLatency | None:
        """Closed-form latency at `arrival_rps` items/s over `replicas` replicas (None: unknown)."""

    def visits(
        self, spec: Spec, stage: Stage, arrival_s: np.ndarray, seed: int, max_work: int | None = None
    ) -> Visits | None:
        """A co-simulated stage (its `Step.cosim`): each visit's latency (s), and its first output's
        when it streams, from the visits' arrival times at the stage (s, any order), by a simulation
        of its own; None: the handler serves it. `max_work`: what is left of the pipeline's budget
        (simulated events; None: the model's own limit); the simulation stays within it and says
        what it spent (`Visits.work`) and which visits it did not answer (`Visits.answered`)."""
        return None


HANDLERS: dict[int, Handler] = {}
_MODELS: dict[str, type[ServiceModel]] = {}
BUILTIN = ("triton-dynamic-batcher", "worker-pool", "continuous-batcher")
BUILTIN_SLOTS = 2  # the built-in handlers' slots (the continuous batcher reuses the worker pool's)
MAX_HANDLERS = 4  # event-loop slots (`pipesim_kernel`): two built in, two for plug-ins


def register_handler(h: Handler) -> Handler:
    """Add an event-loop handler; its slot must be free and below MAX_HANDLERS."""
    if not 0 <= h.slot < MAX_HANDLERS:
        raise ValueError(f"handler slot {h.slot} outside 0..{MAX_HANDLERS - 1}")
    old = HANDLERS.get(h.slot)
    if old is not None and old is not h:
        raise ValueError(f"handler slot {h.slot} is taken by '{old.name}'")
    HANDLERS[h.slot] = h
    return h


def register(cls: type[ServiceModel]) -> type[ServiceModel]:
    """Class decorator: add a service model (refuses a second model of the same name)."""
    if cls.name in _MODELS and _MODELS[cls.name] is not cls:
        raise ValueError(f"service model '{cls.name}' is registered twice")
    register_handler(cls.handler)
    _MODELS[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    """Remove a plug-in (tests); the built-in models stay."""
    if name in BUILTIN:
        raise ValueError(f"'{name}' is built in")
    cls = _MODELS.pop(name, None)
    if cls is not None and all(m.handler is not cls.handler for m in _MODELS.values()):
        HANDLERS.pop(cls.handler.slot, None)


def models() -> dict[str, type[ServiceModel]]:
    """The registered service models by name, built-in first."""
    _load_builtin()
    return dict(_MODELS)


def only_builtin() -> bool:
    """True while every registered handler is built in (the compiled event loop may be cached)."""
    _load_builtin()
    return all(h.slot < BUILTIN_SLOTS for h in HANDLERS.values())


def model_for(stage: Stage) -> ServiceModel:
    """The service model of `stage`: the latest registered one that applies."""
    _load_builtin()
    for cls in reversed(list(_MODELS.values())):
        if cls.applies(stage):
            return cls()
    raise LookupError(f"no service model applies to stage '{stage.id}'")  # the worker pool takes any


def _load_builtin() -> None:
    if BUILTIN[0] not in _MODELS:
        from archkit.perf.service_models import continuous_batcher, dynamic_batcher, worker_pool  # noqa: F401


def finite_ms(seconds: float) -> float:
    """Seconds to milliseconds, keeping ∞ (an overloaded queue)."""
    return 1000 * seconds if math.isfinite(seconds) else math.inf


def handlers_stamp() -> str:
    """A digest of the built-in handlers' source (`pipesim_kernel.HANDLERS_STAMP` must equal it)."""
    import hashlib
    import inspect

    _load_builtin()
    h = hashlib.sha256()
    for slot in range(BUILTIN_SLOTS):
        for fn in (HANDLERS[slot].calls, HANDLERS[slot].take, HANDLERS[slot].work):
            h.update(inspect.getsource(fn).encode())
    return h.hexdigest()[:16]
