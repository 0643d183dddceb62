"""The whole-pipeline simulation's event loop (`pipesim_loop`), compiled or as plain Python.

One source serves both ways: `run` compiles the loop with numba on first use (cached on disk);
`run_python` is the same function as ordinary Python, about 35× slower with identical results
(every random draw is made by numpy before the loop, in `pipesim`). `bind` points the loop's
handler slots at the service models' handlers (`archkit.perf.service_models`).
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from archkit.perf import pipesim_loop as loop
from archkit.perf import pipesim_state
from archkit.perf.service_models import worker_pool

HANDLERS_STAMP = loop.HANDLERS_STAMP
SCAN_PER_EVENT = loop.SCAN_PER_EVENT
_compiled: Any = None


def _tables(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """`pipesim`'s arguments with the steps' 15 parameter arrays (4-17 and 19) as the loop's two tables."""
    sti, stf = pipesim_state.steps(*args[4:18], args[19])
    return (*args[:4], sti, stf, args[18], *args[20:])


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """The event loop, compiled by numba on first use (and cached on disk), else plain Python.

    Compiling lazily keeps `import archkit.api` free of numba's import cost.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float] = _compiled(*_tables(args))
    return out


def run_python(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """The same loop as plain Python (the benchmark's peer; what runs without numba)."""
    return loop._run(*_tables(args))  # type: ignore[no-any-return]


def bind(handlers: dict[int, Any]) -> None:
    """Point the handler slots at `handlers` (slot -> `service_models.Handler`), as plain Python.

    `run_python` sees the change at once; the compiled loop is rebuilt on its next use."""
    global _compiled
    g = vars(loop)
    for slot in range(4):
        h = handlers.get(slot)
        g[f"_h{slot}_calls"] = h.calls if h is not None else worker_pool.calls
        g[f"_h{slot}_take"] = h.take if h is not None else worker_pool.take
        g[f"_h{slot}_work"] = h.work if h is not None else worker_pool.work
    _bound.clear()
    _bound.update(handlers)
    _compiled = None


_bound: dict[int, Any] = {}


def bound() -> dict[int, Any]:
    """The handlers the slots point at now."""
    return dict(_bound)


def _compile() -> Any:
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency; a stripped install still works
        return loop._run
    from archkit.perf import service_models

    # a plug-in's handler is compiled afresh each process: the on-disk cache knows only the loop's file
    cache = service_models.only_builtin()
    # the compiled loop resolves its parts in a copy of the module's globals, so that `run_python`
    # stays plain Python after a compile (calling compiled parts from Python converts every array)
    g = dict(vars(loop))

    def own(name: str) -> Any:
        fn = getattr(loop, name)
        return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__)

    for name in loop.GROWTH:  # `pipesim_state`'s, once a run or when a pool is full: plain calls
        g[name] = numba.njit(cache=True)(getattr(loop, name))
    # inlined into the loop at numba's IR level: a handler costs no call (the benchmark's speed)
    for slot in range(4):
        for part in ("calls", "take", "work"):
            name = f"_h{slot}_{part}"
            g[name] = numba.njit(cache=cache, inline="always")(g[name])
    for name in loop.PARTS:
        g[name] = numba.njit(cache=cache, inline="always")(own(name))
    return numba.njit(cache=cache, nogil=True)(own("_run"))
