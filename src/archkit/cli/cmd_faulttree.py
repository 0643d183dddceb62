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
from archkit.cli.output import archkit_errors, fail, write_new


class FtFormat(str, Enum):
    """Output formats of `archkit faulttree`."""

    text = "text"
    json = "json"


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
    from archkit import api

    if target == "import":
        _import(files or [], mission_time, output)
        return
    if target == "export":
        _export(files or [], tree, output)
        return
    if files:
        raise fail(f"unexpected argument {files[0]}; analyse one SPEC at a time", 2)
    with archkit_errors():
        trees = api.fault_trees(target, tree, mission_time)
    switches = _house(house)
    reports: list[dict[str, Any]] = []
    lines: list[str] = []
    failed = False
    for t in trees:
        prog = _Progress()
        try:
            a = api.analyse_fault_tree(t, order=order, cutoff=cutoff, house=switches, progress=prog)
        except api.FaultTreeError as exc:
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
    from archkit import api

    with archkit_errors():
        text, count = api.import_fault_trees(list(files), mission)
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_new(output, text)
        typer.echo(f"wrote {output}: {count} fault tree(s)", err=True)


def _export(files: list[Path], tree: str | None, output: Path | None) -> None:
    from archkit import api

    if len(files) != 1:
        raise fail("export needs one SPEC and --tree ID", 2)
    with archkit_errors():
        text = api.export_fault_tree(files[0], tree)
    if output is None:
        typer.echo(text, nl=False)
    else:
        write_new(output, text)
