"""Helpers for the security tests: specs from dicts, generated files on disk, the real consumers."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from archkit import api
from archkit.spec.model import Spec

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
BASH = shutil.which("bash") or "/bin/bash"


def load_doc(doc: dict[str, Any], folder: Path, name: str = "spec.yaml") -> Spec:
    """The spec of `doc`, written to `folder/name` and loaded the way the CLI loads it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    res = api.load(path)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return folder


def run(*argv: str | Path, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, cwd=cwd, timeout=timeout, check=False
    )


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run(PROMTOOL, *args)


# A fenced block: an opening run of 3+ backticks (CommonMark) with an info string, up to the same run
FENCE_RE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.M | re.S)


def command_blocks(markdown: str, infos: tuple[str, ...] = ("sh", "bash", "shell")) -> list[str]:
    """The bodies of the shell code fences of a Markdown page."""
    return [m["body"] for m in FENCE_RE.finditer(markdown) if m["info"].strip() in infos]


def bash_syntax(blocks: list[str], folder: Path) -> list[tuple[str, str]]:
    """(block, bash's complaint) for every block that `bash -n` refuses."""
    bad = []
    folder.mkdir(parents=True, exist_ok=True)
    for i, block in enumerate(blocks):
        script = folder / f"block{i}.sh"
        script.write_text(block, encoding="utf-8")
        res = run(BASH, "-n", script)
        if res.returncode != 0:
            bad.append((block, res.stderr.strip()))
    return bad


def needs(tool: str | Path) -> Any:
    import pytest

    present = Path(tool).exists() if "/" in str(tool) else shutil.which(str(tool)) is not None
    return pytest.mark.skipif(not present, reason=f"{tool} not installed (make setup)")
