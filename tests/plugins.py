"""Install a test-sized plug-in the way a distribution ships one: a module and a `.dist-info`
folder with `entry_points.txt` on sys.path, found by importlib.metadata like an installed wheel."""

from __future__ import annotations

from pathlib import Path

import pytest


def install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, group: str, entry: str
) -> None:
    """Write `module`.py with `source` and a distribution declaring `entry` (`NAME = module:obj`)
    in entry point `group`; the folder is on sys.path for the test only."""
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    info = tmp_path / f"{module}-0.1.dist-info"
    info.mkdir()
    name = module.replace("_", "-")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
