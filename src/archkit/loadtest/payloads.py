"""Where a load test's payload files are, checked before it starts (no load-generator imports,
so `calibrate` can ask on an install without the `load` extra)."""

from __future__ import annotations

from pathlib import Path

from archkit.loadtest.plan import PlanError
from archkit.reporting import locate
from archkit.spec.model import Spec


def _loc(spec: Spec, path: tuple) -> str:
    where = locate(spec, path)
    return f"{where.file}:{where.line}: {where.path}"


def payload_root(spec: Spec, spec_dir: Path) -> Path:
    """Where payload paths are relative to: the spec's folder, else the current directory.

    The spec's folder wins, so a spec and its payloads move together; specs written relative
    to a repository root (run from there) keep working.
    """
    try:
        check_payloads(spec, spec_dir)
        return spec_dir
    except PlanError:
        cwd = Path.cwd()
        if cwd != spec_dir:
            try:
                check_payloads(spec, cwd)
                return cwd
            except PlanError:
                pass
        raise


def check_payloads(spec: Spec, root: Path) -> None:
    """Refuse before starting when a scenario's payload file or folder is missing."""
    for sc in spec.loadtest.scenarios if spec.loadtest else []:
        p = sc.payload
        if p is None or p.template is not None:
            continue
        path = tuple(p.spec_path)
        if p.file is not None and not (root / p.file).is_file():
            raise PlanError(f"{_loc(spec, path + ('file',))}: payload file {p.file} not found under {root}")
        if p.folder is not None:
            folder = root / p.folder
            if not folder.is_dir() or not any(x.is_file() for x in folder.glob(p.glob)):
                raise PlanError(
                    f"{_loc(spec, path + ('folder',))}: no file matches {p.folder}/{p.glob} under {root}"
                )
