"""The event loop's parts live in their own module; numba's cache of the loop must still notice a change to them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from archkit.perf import pipesim_kernel, pipesim_parts


def test_kernel_stamp_matches_its_parts() -> None:
    """numba caches the compiled loop by the loop's own file: a change to `pipesim_parts` must
    change `pipesim_kernel.PARTS_STAMP` (the first 16 hex digits of the parts file's SHA-256),
    or a stale compiled loop would run."""
    digest = hashlib.sha256(Path(pipesim_parts.__file__).read_bytes()).hexdigest()[:16]
    assert digest == pipesim_kernel.PARTS_STAMP, f"set pipesim_kernel.PARTS_STAMP = {digest!r}"
