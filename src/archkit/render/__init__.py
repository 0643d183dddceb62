"""Render orchestration: generators in memory, their sources through the renderers, files written safely.

`tree` is the safe tree writer (atomic files, a manifest, no symlinks followed, a user's
file never overwritten).
"""

from __future__ import annotations
