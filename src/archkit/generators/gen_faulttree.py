"""Fault-tree diagrams (Graphviz): gates, leaf checks, probabilities, SPOFs and minimal cut sets."""

from __future__ import annotations

from typing import Any

from archkit.generators.diagram_text import html, html_lines, num
from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register
from archkit.spec.model import FaultTree

GATE_COLOUR = {"or": "#f59e0b", "and": "#2563eb", "atleast": "#7c3aed"}
SPOF_RED = "#d62728"
MAX_CUT_SETS_SHOWN = 12


def prob(p: float | None) -> str:
    if p is None:
        return "p = ?"
    return f"p = {p:.3g}"


def _analysis(tree: FaultTree) -> Any:
    """`archkit.analysis.faulttree.analyse` when it can analyse the tree, else None."""
    try:
        from archkit.analysis.faulttree import analyse
    except ImportError:  # pragma: no cover - the analysis ships with archkit; kept for plugins' trees
        return None
    from archkit.analysis.faulttree import FaultTreeError

    try:
        return analyse(tree)
    except (FaultTreeError, RecursionError):  # a broken tree is reported by AK108; draw it anyway
        return None


def _trivial_spofs(tree: FaultTree) -> list[str]:
    """Events reached from the top through OR gates only: each alone fails the top event."""
    gates = {g.id: g for g in tree.gates}
    events = {e.id for e in tree.events}
    out: list[str] = []
    seen: set[str] = set()
    stack = [tree.top]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in events:
            out.append(node)
        elif node in gates:
            g = gates[node]
            if g.type.value == "or" or (g.type.value == "atleast" and g.k == 1):
                stack.extend(reversed(g.inputs))
    return sorted(out)


def tree_view(ctx: RenderContext, tree: FaultTree) -> dict[str, Any]:
    a = _analysis(tree)
    spofs = set(a.single_points_of_failure if a is not None else _trivial_spofs(tree))
    probs = a.event_probabilities if a is not None else {e.id: e.probability for e in tree.events}
    ids: dict[str, str] = {}
    for i, g in enumerate(tree.gates):
        ids.setdefault(g.id, f"g{i}")
    for i, e in enumerate(tree.events):
        ids.setdefault(e.id, f"e{i}")
    gates = []
    for i, g in enumerate(tree.gates):
        if ids[g.id] != f"g{i}":
            continue
        kind = g.type.value
        text = {"or": "OR", "and": "AND"}.get(kind, f"≥ {g.k or '?'} of {len(g.inputs)}")
        top = g.id == tree.top
        title = g.label or g.id
        label = (f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
                 f'<TR><TD><B>{html_lines(title, 30, 160)}</B></TD></TR>'
                 + (f'<TR><TD><FONT POINT-SIZE="8" COLOR="#555555">{html(g.id)}</FONT></TD></TR>'
                    if g.label else "")
                 + f'<TR><TD BGCOLOR="{GATE_COLOUR[kind]}"><FONT COLOR="#ffffff"><B>{html(text)}</B>'
                 f'</FONT></TD></TR></TABLE>>')
        gates.append({"id": ids[g.id], "label": label, "top": top})
    events = []
    for i, e in enumerate(tree.events):
        if ids[e.id] != f"e{i}":
            continue
        spof = e.id in spofs
        rows = [f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><B>{html_lines(e.label or e.id, 30, 160)}</B></TD></TR>']
        if e.label:
            rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8" COLOR="#555555">{html(e.id)}</FONT></TD></TR>')
        p = probs.get(e.id)
        ptxt = prob(p) + (f" (λ {num(e.rate_per_hour)}/h)" if e.rate_per_hour is not None else "")
        rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT">{html(ptxt)}</TD></TR>')
        if e.check:
            rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT" BGCOLOR="#f3f4f6"><FONT FACE="DejaVu Sans Mono" POINT-SIZE="8">'
                        f'$ {html_lines(e.check, 40, 240)}</FONT></TD></TR>')
        expect = (f"expect “{e.expect}”" if e.expect is not None else
                  f"expect /{e.expect_regex}/" if e.expect_regex is not None else
                  f"expect exit {e.expect_exit_code}" if e.expect_exit_code is not None else "")
        if expect:
            rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="8">{html_lines(expect, 44, 160)}</FONT></TD></TR>')
        if spof:
            rows.append(f'<TR><TD ALIGN="LEFT" BALIGN="LEFT"><FONT COLOR="{SPOF_RED}"><B>single point of failure</B>'
                        f'</FONT></TD></TR>')
        label = '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">' + "".join(rows) + "</TABLE>>"
        events.append({"id": ids[e.id], "label": label, "spof": spof})
    # gates with a single point of failure below them: the whole path from the top is drawn red
    gate_inputs = {g.id: g.inputs for g in tree.gates}
    leads_to_spof: dict[str, bool] = {}

    def spof_below(node: str, trail: frozenset = frozenset()) -> bool:
        if node in spofs:
            return True
        if node not in gate_inputs or node in trail:
            return False
        if node not in leads_to_spof:
            leads_to_spof[node] = any(spof_below(x, trail | {node}) for x in gate_inputs[node])
        return leads_to_spof[node]

    missing = []
    edges = []
    for i, g in enumerate(tree.gates):
        if ids[g.id] != f"g{i}":
            continue
        for inp in g.inputs:
            if inp not in ids:
                ids[inp] = f"x{len(missing)}"
                missing.append({"id": ids[inp], "label": f"undefined {inp}"})
            edges.append({"src": ids[g.id], "dst": ids[inp], "spof": spof_below(inp)})
    cut_rows = []
    if a is not None:
        for cs in a.cut_sets[:MAX_CUT_SETS_SHOWN]:
            names = ", ".join(sorted(cs))
            colour = SPOF_RED if len(cs) == 1 else "#111111"
            cut_rows.append({"text": html_lines("{" + names + "}", 60, 300), "colour": colour,
                             "p": html(prob(a.cut_set_probability(cs)))})
    more = (len(a.cut_sets) - MAX_CUT_SETS_SHOWN) if a is not None and len(a.cut_sets) > MAX_CUT_SETS_SHOWN else 0
    title = tree.label or tree.id
    sub = [f"fault tree {tree.id}"]
    if tree.service:
        sub.append(f"service {tree.service}")
    if a is not None and a.probability is not None:
        sub.append(f"top event p = {a.probability:.3g}" + (f" over {num(tree.mission_time_h)} h"
                                                           if tree.mission_time_h else ""))
    return {
        "header": ctx.header("//"),
        "title": html_lines(title, 80, 200), "subtitle": html(" · ".join(sub)),
        "gates": gates, "events": events, "missing": missing, "edges": edges,
        "top": ids.get(tree.top), "cut_sets": cut_rows, "more_cut_sets": more,
        "analysed": a is not None, "spof_count": len(spofs),
    }


def faulttree_sources(ctx: RenderContext) -> dict[str, str]:
    """`faulttree/<tree id>.dot` for every tree of the spec (first of duplicate ids wins)."""
    def build() -> dict[str, str]:
        out: dict[str, str] = {}
        for tree in ctx.spec.faulttrees:
            rel = f"faulttree/{tree.id}.dot"
            if rel not in out:
                out[rel] = render("faulttree/faulttree.dot.j2", ctx.templates_dir, **tree_view(ctx, tree))
        return out
    return ctx.memo("faulttree.dot", build)


@register("faulttree", order=40)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Fault trees: AND/OR/atleast gates, leaf checks and probabilities, SPOFs, minimal cut sets."""
    return dict(faulttree_sources(ctx))
