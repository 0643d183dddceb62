"""The whole-pipeline simulation's event loop (`pipesim_loop`), compiled or as plain Python.

One source serves both ways: `run` compiles the loop with numba on first use (cached on disk);
`run_python` is the same function as ordinary Python, about 35× slower with identical results
(every random draw is made by numpy before the loop, in `pipesim`). `bind` points the loop's
handler slots at the service models' handlers (`archkit.perf.service_models`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from archkit.perf import pipesim_loop as loop
from archkit.perf.service_models import worker_pool

HANDLERS_STAMP = loop.HANDLERS_STAMP
SCAN_PER_EVENT = loop.SCAN_PER_EVENT
# the loop's parts as plain Python, taken before a compile replaces them
_PY = {name: getattr(loop, name) for name in loop.PARTS}
run_python = loop._run  # the same loop as plain Python (the benchmark's peer; what runs without numba)
_compiled: Any = None


def run(*args: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float]:
    """The event loop, compiled by numba on first use (and cached on disk), else plain Python.

    Compiling lazily keeps `import archkit.api` free of numba's import cost.
    """
    global _compiled
    if _compiled is None:
        _compiled = _compile()
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, float] = _compiled(*args)
    return out


def bind(handlers: dict[int, Any]) -> None:
    """Point the handler slots at `handlers` (slot -> `service_models.Handler`), as plain Python.

    `run_python` sees the change at once; the compiled loop is rebuilt on its next use."""
    global _compiled
    g = vars(loop)
    g.update(_PY)  # the parts as plain Python again, until the next compile
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
    g = vars(loop)
    # the functions the loop calls must be compiled first: the loop resolves them as globals
    g["_grow_i"] = numba.njit(cache=True)(_PY["_grow_i"])
    g["_grow_f"] = numba.njit(cache=True)(_PY["_grow_f"])
    # inlined into the loop at numba's IR level: a handler costs no call (the benchmark's speed)
    for slot in range(4):
        for part in ("calls", "take", "work"):
            name = f"_h{slot}_{part}"
            g[name] = numba.njit(cache=cache, inline="always")(g[name])
    for name in ("_calls", "_take", "_work"):
        g[name] = numba.njit(cache=cache, inline="always")(_PY[name])
    g["_release"] = numba.njit(cache=cache)(_PY["_release"])
    return numba.njit(cache=cache, nogil=True)(loop._run)
