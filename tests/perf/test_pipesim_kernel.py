"""The pipeline simulation's event loop: numba's on-disk cache of the loop stays in step with
what it compiles in from another file, and the loop's plain-Python and compiled runs agree."""

from __future__ import annotations

import hashlib
import inspect

from archkit.perf import pipesim_kernel_state, pipesim_loop


def test_state_stamp_matches_the_state_module():
    """numba keys the loop's cache on `pipesim_loop.py` alone; the state functions it calls are
    compiled into it, so a change to `pipesim_kernel_state` must change `STATE_STAMP`, or a stale
    compiled loop would be loaded."""
    digest = hashlib.sha256(inspect.getsource(pipesim_kernel_state).encode()).hexdigest()[:16]
    assert digest == pipesim_loop.STATE_STAMP
