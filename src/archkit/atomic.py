"""Atomic file writes (a reader sees the old file or the new one, never half of either), and a
file's digest read in bounded memory."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def file_mode() -> int:
    """The mode a plain `open()` would give a new file (mkstemp's 0600 is for secrets)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _temp_copy(path: Path, data: bytes) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, file_mode())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Replace `path` with `data` in one rename."""
    path = Path(path)
    tmp = _temp_copy(path, data.encode("utf-8") if isinstance(data, str) else data)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def create_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Create `path` with `data`; FileExistsError instead of replacing a file that is there."""
    path = Path(path)
    tmp = _temp_copy(path, data.encode("utf-8") if isinstance(data, str) else data)
    try:
        os.link(tmp, path)
    finally:
        os.unlink(tmp)


def file_sha256(path: Path) -> str:
    """A file's SHA-256, read in 1 MiB blocks (a model file may be tens of GB)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
