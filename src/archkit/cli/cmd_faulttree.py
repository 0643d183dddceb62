"""`archkit faulttree`: analyse a spec's fault trees; import and export Open-PSA MEF."""

from __future__ import annotations

import json
import math
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from archkit.cli import app
from archkit.cli.output import fail, write_new

MAX_XML_BYTES = 64 * 1024 * 1024  # the largest Aralia model is 0.2 MiB


class FtFormat(str, Enum):
    """Output formats of `archkit faulttree`."""

    text = "text"
    json = "json"


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_XML_BYTES + 1)
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    if len(data) > MAX_XML_BYTES:
        raise fail(f"{path}: larger than {MAX_XML_BYTES // 2**20} MiB; refused", 2)
    return data


def _no_such_tree(tree: str | None, target: object, trees: list[Any]) -> str:
    """The error for a --tree the spec lacks, naming the trees it has (as `runbook` does)."""
    if not trees:
        return f"{target} declares no fault trees"
    return f"no fault tree {tree!r} in {target}; the spec has: {', '.join(t.id for t in trees)}"


def _trees(target: Path, mission: float | None) -> list[Any]:
    from archkit.interchange.mef import MefError, import_mef

    if target.suffix.lower() == ".xml":
        try:
            return import_mef([(str(target), _read(target))], mission)
        except MefError as exc:
            raise fail(str(exc), 2) from None
    from archkit.spec import load_file

    res = load_file(target)
    if res.spec is None:
        first = res.diagnostics[0].text() if res.diagnostics else f"{target}: does not load"
        raise fail(first, 2)
    return list(res.spec.faulttrees)


def _house(values: list[str] | None) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for v in values or []:
        name, _, state = v.partition("=")
        if state.lower() not in ("true", "false"):
            raise fail(f"--house {v!r}: write ID=true or ID=false", 2)
        out[name] = state.lower() == "true"
    return out


class _Progress:
    """Progress on stderr once an analysis has run for a second, on a terminal only."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if time.monotonic() - self.start < 1.0 or not sys.stderr.isatty():
            return
        of = f"/{total}" if total else ""
        print(f"\r  {phase}: {done:,}{of}   ", end="", file=sys.stderr, flush=True)
        self.shown = True

    def done(self) -> None:
        if self.shown:
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def _text_report(tree: Any, a: Any, top_n: int) -> list[str]:
    lines = [f"fault tree {a.tree_id}: {len(tree.events)} event(s), {len(tree.gates)} gate(s)"]
    if a.probability is not None:
        lines.append(
            f"  top event probability: {a.probability:.7g} "
            f"(exact, BDD of {a.bdd_nodes:,} nodes, {a.variable_order} variable order)"
        )
    else:
        lines.append(
            f"  top event probability: unknown (no probability for: {', '.join(a.missing_probability[:8])})"
        )
    kind = (
        "minimal cut sets"
        if a.coherent
        else "minimal failure sets (not coherent: positive parts of prime implicants)"
    )
    limits = []
    if a.order_limit is not None:
        limits.append(f"order <= {a.order_limit}")
    if a.cutoff is not None:
        limits.append(f"probability >= {a.cutoff:g}")
    by_order = ", ".join(f"{i}: {c:,}" for i, c in enumerate(a.counts_by_order) if c)
    lim = f" [{'; '.join(limits)}]" if limits else ""
    if a.cut_sets_refused is not None:
        lines.append(f"  {kind}: not found: {a.cut_sets_refused}")
    else:
        lines.append(f"  {kind}: {a.cut_set_count:,}{lim}" + (f" (by order {by_order})" if by_order else ""))
    if a.rare_event is not None:
        lines.append(f"  approximations: rare event {_fmt(a.rare_event)}, MCUB {_fmt(a.mcub)}")
    if a.fussell_vesely:
        lines.append("  most important events (Fussell-Vesely diagnosis importance P(e | top)):")
        lines.append(f"    {'event':24s} {'p':>10s} {'FV':>10s} {'Birnbaum':>10s} {'RAW':>10s} {'RRW':>10s}")
        ranked = sorted(a.fussell_vesely, key=lambda e: (-a.fussell_vesely[e], e))[:top_n]
        for e in ranked:
            lines.append(
                f"    {e[:24]:24s} {_fmt(a.event_probabilities.get(e)):>10s} {_fmt(a.fussell_vesely[e]):>10s} "
                f"{_fmt(a.birnbaum[e]):>10s} {_fmt(a.raw[e]):>10s} {_fmt(a.rrw[e]):>10s}"
            )
    if a.seconds:
        slow = max(a.seconds, key=lambda k: a.seconds[k])
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in a.seconds.items())
        lines.append(f"  time: {parts}; longest: {slow}")
    if a.unused_events:
        lines.append(f"  unused events: {', '.join(a.unused_events[:10])}")
    return lines


@app.command()
def faulttree(
    target: Annotated[str, typer.Argument(help="SPEC (or MODEL.xml) to analyse, or `import` / `export`.")],
    files: Annotated[list[Path] | None, typer.Argument(help="import: MEF files; export: the SPEC.")] = None,
    tree: Annotated[str | None, typer.Option("--tree", "-t", help="Only this fault tree.")] = None,
    order: Annotated[int | None, typer.Option("--order", min=1, help="Drop cut sets of more events.")] = None,
    cutoff: Annotated[
        float | None,
        typer.Option("--cutoff", min=0.0, max=1.0, help="Drop cut sets less probable than this."),
    ] = None,
    house: Annotated[
        list[str] | None, typer.Option("--house", help="Switch a house event: ID=true|false.")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, help="How many important events to list.")] = 10,
    list_cut_sets: Annotated[int, typer.Option("--cut-sets", min=0, help="Print this many cut sets.")] = 0,
    mission_time: Annotated[
        float | None,
        typer.Option("--mission-time", min=0.0, help="import: hours for <system-mission-time/>."),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="import/export: a new file.")] = None,
    format: Annotated[FtFormat, typer.Option("--format", "-f", help="text or json.")] = FtFormat.text,
) -> None:
    """Fault-tree analysis, and Open-PSA MEF in and out.

    archkit faulttree SPEC [--tree ID] [--order N] [--cutoff P] [--house ID=true] [--format json]:
    exact top probability (BDD), minimal cut sets counted by order, the most important events,
    and the time each part took. A MODEL.xml is imported on the fly.

    archkit faulttree import MODEL.xml [MORE.xml ...] [-o NEW.yaml]: the model's trees as a
    spec with a `faulttrees` section, to stdout or to a new file (never over an existing one).

    archkit faulttree export SPEC --tree ID [-o NEW.xml]: one tree as MEF XML.
    """
    from archkit.faulttree import FaultTreeError, analyse

    if target == "import":
        _import(files or [], mission_time, output)
        return
    if target == "export":
        _export(files or [], tree, output)
        return
    if files:
        raise fail(f"unexpected argument {files[0]}; analyse one SPEC at a time", 2)
    every = _trees(Path(target), mission_time)
    trees = [t for t in every if tree is None or t.id == tree]
    if not trees:
        raise fail(_no_such_tree(tree, target, every), 2)
    switches = _house(house)
    reports: list[dict[str, Any]] = []
    lines: list[str] = []
    failed = False
    for t in trees:
        prog = _Progress()
        sw = {k: v for k, v in switches.items() if any(h.id == k for h in t.house_events)}
        try:
            a = analyse(t, order=order, cutoff=cutoff, house=sw, progress=prog)
        except FaultTreeError as exc:
            prog.done()
            failed = True
            lines.append(f"fault tree {t.id}: cannot be analysed: {exc}")
            reports.append({"tree": t.id, "error": str(exc)})
            continue
        prog.done()
        failed = failed or a.cut_sets_refused is not None  # a partial answer is not a pass
        d = a.to_dict()
        if format is FtFormat.json:
            d["cut_sets"] = d["cut_sets"][:list_cut_sets] if list_cut_sets else []
            reports.append(d)
        else:
            lines.extend(_text_report(t, a, top))
            for cs in a.cut_sets[:list_cut_sets]:
                lines.append("    {" + ", ".join(sorted(cs)) + "}")
    unknown = set(switches) - {h.id for t in trees for h in t.house_events}
    if unknown:
        raise fail(f"--house: no house event {', '.join(sorted(unknown))}", 2)
    if format is FtFormat.json:
        typer.echo(json.dumps(reports if len(reports) != 1 else reports[0], indent=2, default=_json_default))
    else:
        typer.echo("\n".join(lines))
    raise typer.Exit(1 if failed else 0)


def _json_default(x: Any) -> Any:
    return str(x)


def _import(files: list[Path], mission: float | None, output: Path | None) -> None:
    import yaml

    from archkit.interchange.mef import MefError, import_mef

    if not files:
        raise fail("import needs MODEL.xml (one model may span several files)", 2)
    try:
        trees = import_mef([(str(f), _read(f)) for f in files], mission)
    except MefError as exc:
        raise fail(str(exc), 2) from None
    doc = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": files[0].stem.replace("_", "-").lower() or "imported"},
        "faulttrees": [t.model_dump(mode="json", by_alias=True, exclude_defaults=True) for t in trees],
    }
    text = f"# imported from Open-PSA MEF: {', '.join(f.name for f in files)}\n" + yaml.safe_dump(
        doc, sort_keys=False, allow_unicode=True, width=100
    )
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_new(output, text)
        typer.echo(f"wrote {output}: {len(trees)} fault tree(s)", err=True)


def _export(files: list[Path], tree: str | None, output: Path | None) -> None:
    from archkit.interchange.mef import export_mef

    if len(files) != 1:
        raise fail("export needs one SPEC and --tree ID", 2)
    trees = _trees(files[0], None)
    chosen = [t for t in trees if tree is None or t.id == tree]
    if tree is None and len(chosen) > 1:
        raise fail(
            "the spec has several fault trees; choose one with --tree: " + ", ".join(t.id for t in trees), 2
        )
    if not chosen:
        raise fail(_no_such_tree(tree, files[0], trees), 2)
    text = export_mef(chosen[0])
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_new(output, text)
