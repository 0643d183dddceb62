"""archkit installed with no extras: every command answers, and one that needs an extra says which in one line.

The wheel goes into a fresh venv outside the repository (no system site packages, the
repository's constraints.txt), without `[render]`, `[load]` or `[cluster]`.
"""

from __future__ import annotations

import re
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions, requires
from pathlib import Path

import pytest

from archkit.errors import EXTRAS
from tests.conftest import ROOT
from tests.packaging.test_install_outside import _run, _user_env

SPEC = ROOT / "specs" / "ocr-reference.yaml"
SNAPSHOT = ROOT / "tests" / "verify" / "fixtures" / "industrial-inspection" / "snapshot.yaml"
MEF = ROOT / "tests" / "faulttree" / "faulttrees" / "aralia" / "edf9202.xml"

# (arguments, exit codes it may give bare, the extra its one line must name or None)
COMMANDS: list[tuple[list[str], set[int], str | None]] = [
    (["loadtest", str(SPEC)], {2}, "load"),
    (["loadtest", "/nonexistent.yaml"], {2}, "load"),
    (["verify", str(SPEC)], {2}, "cluster"),
    (["verify", str(SPEC), "--context", "kind-x"], {2}, "cluster"),
    (["verify", str(SPEC), "--triton-url", "http://127.0.0.1:9"], {2}, "load"),
    (["verify", str(SPEC), "--prometheus-url", "http://127.0.0.1:9"], {0, 1}, None),
    (["verify", str(SPEC), "--snapshot", str(SNAPSHOT)], {0, 1}, None),
    (["check", str(SPEC)], {0}, None),
    (["capacity", str(SPEC)], {0}, None),
    (["render", str(SPEC), "-o", "out"], {1}, None),  # the topology diagram names [render] itself
    (["runbook", str(SPEC)], {0}, None),
    (["calibrate", str(SPEC), "--triton", "http://127.0.0.1:9"], {2}, None),
    (["faulttree", str(SPEC)], {0}, None),
    (["faulttree", "import", str(MEF)], {0}, None),
    (["slo", "export", str(SPEC)], {0}, None),
    (["doctor"], {0, 1}, None),
    (["renderers", "install", "--from", "/nonexistent"], {2}, None),
    (["schema"], {0}, None),
    (["rules"], {0}, None),
    (["explain", "AK203"], {0}, None),
    (["init", "new.yaml"], {0}, None),
]


@pytest.fixture(scope="module")
def bare_venv() -> Iterator[tuple[Path, Path]]:
    """(archkit executable of a fresh venv with the bare wheel, a temp dir outside the repo)."""
    with tempfile.TemporaryDirectory(prefix="archkit-bare-") as tmp:
        base = Path(tmp)
        dist = base / "dist"
        proc = _run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
            + [str(ROOT)],
            base,
            _user_env(base / "home", base / "cache"),
        )
        assert proc.returncode == 0, proc.stderr
        venv = base / "venv"
        assert _run([sys.executable, "-m", "venv", str(venv)], base, {}).returncode == 0
        wheel = next(dist.glob("archkit-*.whl"))
        proc = _run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt")]
            + [str(wheel)],
            base,
            _user_env(base / "home", base / "cache"),
        )
        assert proc.returncode == 0, proc.stderr
        yield venv / "bin" / "archkit", base


@pytest.mark.slow
def test_every_command_answers_bare_and_names_the_extra_it_needs(bare_venv) -> None:
    archkit, base = bare_venv
    work = base / "work"
    work.mkdir()
    env = _user_env(base / "home", base / "cache")
    for args, codes, extra in COMMANDS:
        proc = _run([str(archkit), *args], work, env, timeout=300)
        said = proc.stdout + proc.stderr
        assert "Traceback" not in said, (args, said[-3000:])
        assert proc.returncode in codes, (args, proc.returncode, said[-2000:])
        if extra is not None:
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and f"pip install 'archkit[{extra}]'" in lines[0], (args, proc.stderr)


def _dist(name: str) -> str:
    return re.split(r"[\[=<>~! ;]", name, maxsplit=1)[0].lower().replace("_", "-")


def test_the_extras_table_names_modules_the_extras_install() -> None:
    """errors.EXTRAS (what a command checks) agrees with pyproject.toml (what `pip install archkit[X]` brings)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    owners = packages_distributions()
    for extra, modules in EXTRAS.items():
        listed = {_dist(d) for d in extras[extra]}
        # the extra's own distributions and what they require (tritonclient[http] brings geventhttpclient)
        brought = set(listed)
        for d in listed:
            brought |= {_dist(r) for r in requires(d) or []}
        for module in modules:
            dists = {_dist(d) for d in owners.get(module, [])}
            assert dists & brought, f"{module} ({dists}) is not installed by archkit[{extra}]"
