"""Fault-tree diagrams (Graphviz): gates, leaf checks with their next step, probabilities,
notable single points of failure and minimal cut sets.

A tree the analysis refuses (a limit, a structural error) is still drawn, with the reason
in a red box on the diagram (and so on the review page, which inlines it): never silently
without its figures.

Single points of failure are marked only where they say something: an event that alone
fails the top event (an order-one cut set) in a tree that also has redundancy (some cut
set of order two or more). In a tree of OR gates only, every leaf is such an event, and
marking them all is noise; the subtitle says so instead.
"""

from __future__ import annotations

from typing import Any

from archkit.faulttree import FaultTreeAnalysis, FaultTreeError, analyse, notable_single_points
from archkit.generators.diagram_text import html, html_lines, num
from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register
from archkit.spec.model import BasicEvent, FaultTree, Gate, GateType

GATE_COLOUR = {
    "or": "#f59e0b",
    "and": "#2563eb",
    "atleast": "#7c3aed",
    "not": "#6b7280",
    "xor": "#0d9488",
    "nand": "#1e40af",
    "nor": "#b45309",
    "iff": "#0f766e",
    "imply": "#4b5563",
    "inhibit": "#9333ea",
}
GATE_TEXT = {"or": "OR", "and": "AND", "not": "NOT", "xor": "XOR", "nand": "NAND", "nor": "NOR"}
SPOF_RED = "#d62728"
MAX_CUT_SETS_SHOWN = 12
# Gates, events and house events one diagram draws. Graphviz lays out a few hundred such
# labelled boxes in seconds; das9701's 3,485 (an Aralia benchmark tree) ran past `run_dot`'s
# 300 s, and no reviewer reads a diagram that size. Past it the diagram shows the top of the
# tree, nearest nodes first, and says what it left out; the analysis always covers the whole.
MAX_DRAWN = 300
ROW = '<TR><TD ALIGN="LEFT" BALIGN="LEFT">{}</TD></TR>'


def prob(p: float | None) -> str:
    if p is None:
        return "p = ?"
    return f"p = {p:.3g}"


def _analysis(tree: FaultTree) -> tuple[FaultTreeAnalysis | None, str | None]:
    """The analysis, or None and the reason it was refused (shown on the diagram)."""
    try:
        return analyse(tree), None
    except FaultTreeError as exc:
        return None, str(exc)


def _gate_label(g: Gate) -> str:
    kind = g.type.value
    text = GATE_TEXT.get(kind) or (
        f"≥ {g.k or '?'} of {len(g.inputs)}"
        if g.type is GateType.ATLEAST
        else f"INHIBIT if {g.condition}"
        if g.type is GateType.INHIBIT
        else kind.upper()
    )
    title = g.label or g.id
    return (
        '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2">'
        f"<TR><TD><B>{html_lines(title, 30, 160)}</B></TD></TR>"
        + (f'<TR><TD><FONT POINT-SIZE="8" COLOR="#555555">{html(g.id)}</FONT></TD></TR>' if g.label else "")
        + f'<TR><TD BGCOLOR="{GATE_COLOUR[kind]}"><FONT COLOR="#ffffff"><B>{html_lines(text, 30, 160)}</B>'
        "</FONT></TD></TR></TABLE>>"
    )


def _expectation(e: BasicEvent) -> str:
    if e.expect is not None:
        return f"expect “{e.expect}”"
    if e.expect_regex is not None:
        return f"expect /{e.expect_regex}/"
    if e.expect_exit_code is not None:
        return f"expect exit {e.expect_exit_code}"
    return ""


def _event_label(e: BasicEvent, p: float | None, spof: bool) -> str:
    """Seed 000 §3.4: each leaf carries its check, the healthy output and the next step."""
    rows = [ROW.format(f"<B>{html_lines(e.label or e.id, 30, 160)}</B>")]
    if e.label:
        rows.append(ROW.format(f'<FONT POINT-SIZE="8" COLOR="#555555">{html(e.id)}</FONT>'))
    ptxt = prob(p) + (f" (λ {num(e.rate_per_hour)}/h)" if e.rate_per_hour is not None else "")
    rows.append(ROW.format(html(ptxt)))
    if e.check:
        rows.append(
            '<TR><TD ALIGN="LEFT" BALIGN="LEFT" BGCOLOR="#f3f4f6"><FONT FACE="DejaVu Sans Mono" POINT-SIZE="8">'
            f"check: $ {html_lines(e.check, 40, 240)}</FONT></TD></TR>"
        )
    expect = _expectation(e)
    if expect:
        rows.append(ROW.format(f'<FONT POINT-SIZE="8">{html_lines(expect, 44, 160)}</FONT>'))
    if e.remedy:
        rows.append(
            ROW.format(f'<FONT POINT-SIZE="8" COLOR="#065f46">next: {html_lines(e.remedy, 44, 240)}</FONT>')
        )
    elif e.mismatch_means:
        rows.append(
            ROW.format(f'<FONT POINT-SIZE="8">if not: {html_lines(e.mismatch_means, 44, 200)}</FONT>')
        )
    if spof:
        rows.append(ROW.format(f'<FONT COLOR="{SPOF_RED}"><B>single point of failure</B></FONT>'))
    return '<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">' + "".join(rows) + "</TABLE>>"


def _edges_of(g: Gate) -> list[str]:
    """What a gate's edges lead to: its inputs, then an inhibit gate's condition."""
    return list(g.inputs) + ([g.condition] if g.type is GateType.INHIBIT and g.condition else [])


def _drawn(tree: FaultTree) -> set[str] | None:
    """The ids the diagram draws, or None for all of them: breadth-first from the top (inputs
    in their order, a gate's condition last) until MAX_DRAWN, when the tree has more."""
    if len(tree.gates) + len(tree.events) + len(tree.house_events) <= MAX_DRAWN:
        return None
    inputs: dict[str, list[str]] = {}
    for g in tree.gates:
        inputs.setdefault(g.id, _edges_of(g))
    known = set(inputs) | {e.id for e in tree.events} | {h.id for h in tree.house_events}
    seen = {tree.top}
    queue = [tree.top]
    for node in queue:
        for x in inputs.get(node, []):
            if len(seen) >= MAX_DRAWN:
                return seen
            if x not in seen and x in known:
                seen.add(x)
                queue.append(x)
    return seen


def tree_view(ctx: RenderContext, tree: FaultTree) -> dict[str, Any]:
    a, refused = _analysis(tree)
    drawn = _drawn(tree)

    def shown(node: str) -> bool:
        return drawn is None or node in drawn

    spofs = set(notable_single_points(a)) if a is not None else set()
    probs = a.event_probabilities if a is not None else {e.id: e.probability for e in tree.events}
    ids: dict[str, str] = {}
    for i, g in enumerate(tree.gates):
        ids.setdefault(g.id, f"g{i}")
    for i, e in enumerate(tree.events):
        ids.setdefault(e.id, f"e{i}")
    for i, h in enumerate(tree.house_events):
        ids.setdefault(h.id, f"h{i}")
    defined = len(ids)  # the tree's distinct ids, before undefined inputs get theirs below
    gates = []
    for i, g in enumerate(tree.gates):
        if ids[g.id] == f"g{i}" and shown(g.id):
            gates.append({"id": ids[g.id], "label": _gate_label(g), "top": g.id == tree.top})
    events = []
    for i, e in enumerate(tree.events):
        if ids[e.id] == f"e{i}" and shown(e.id):
            events.append(
                {
                    "id": ids[e.id],
                    "label": _event_label(e, probs.get(e.id), e.id in spofs),
                    "spof": e.id in spofs,
                }
            )
    houses = [
        {"id": ids[h.id], "label": html(f"{h.label or h.id}: {'true' if h.state else 'false'}")}
        for i, h in enumerate(tree.house_events)
        if ids[h.id] == f"h{i}" and shown(h.id)
    ]
    # gates with a single point of failure below them: the whole path from the top is drawn red
    # (every node from which a single point can be reached: one walk up from them, iterative, so
    # a chain of thousands of gates draws instead of meeting the recursion limit; issue 28)
    parents: dict[str, list[str]] = {}
    for g in tree.gates:
        for x in g.inputs:
            parents.setdefault(x, []).append(g.id)
    leads_to_spof = set(spofs)
    todo = list(spofs)
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in leads_to_spof:
                leads_to_spof.add(parent)
                todo.append(parent)

    def spof_below(node: str) -> bool:
        return node in leads_to_spof

    missing: list[dict[str, str]] = []
    folded: list[dict[str, str]] = []  # per drawn gate: its inputs the diagram leaves out
    edges = []
    for i, g in enumerate(tree.gates):
        if ids[g.id] != f"g{i}" or not shown(g.id):
            continue
        targets = _edges_of(g)
        left = sum(1 for x in targets if x in ids and not shown(x))
        if left:
            fold = f"f{len(folded)}"
            folded.append({"id": fold, "label": f"{left} more input{'s' if left > 1 else ''} not drawn"})
            edges.append({"src": ids[g.id], "dst": fold, "spof": False, "condition": False})
        for inp in targets:
            if inp in ids and not shown(inp):
                continue
            if inp not in ids:
                ids[inp] = f"x{len(missing)}"
                missing.append({"id": ids[inp], "label": f"undefined {inp}"})
            condition = g.type is GateType.INHIBIT and inp == g.condition
            edges.append({"src": ids[g.id], "dst": ids[inp], "spof": spof_below(inp), "condition": condition})
    cut_rows = []
    if a is not None:
        for cs in a.cut_sets[:MAX_CUT_SETS_SHOWN]:
            names = ", ".join(sorted(cs))
            colour = SPOF_RED if len(cs) == 1 and next(iter(cs)) in spofs else "#111111"
            cut_rows.append(
                {
                    "text": html_lines("{" + names + "}", 60, 300),
                    "colour": colour,
                    "p": html(prob(a.cut_set_probability(cs))),
                }
            )
    more = (a.cut_set_count - len(cut_rows)) if a is not None else 0
    title = tree.label or tree.id
    sub = [f"fault tree {tree.id}"]
    if tree.service:
        sub.append(f"service {tree.service}")
    if a is not None and a.probability is not None:
        sub.append(
            f"top event p = {a.probability:.3g}"
            + (f" over {num(tree.mission_time_h)} h" if tree.mission_time_h else "")
        )
    if a is not None and a.single_points_of_failure and not spofs:
        sub.append("every event alone fails the top event: no redundancy to mark")
    if drawn is not None:
        sub.append(
            f"drawn: the {len(drawn):,} gates and events nearest the top of {defined:,} "
            f"(the figures cover the whole tree; `archkit faulttree` lists it)"
        )
    cut_title = "minimal cut sets" if a is None or a.coherent else "minimal failure sets (tree with negation)"
    ccf = [
        html(
            f"CCF {grp.id} ({grp.model.value} {', '.join(f'{x:g}' for x in grp.factors)}): {', '.join(grp.members)}"
        )
        for grp in tree.ccf_groups
    ]
    return {
        "header": ctx.header("//"),
        "title": html_lines(title, 80, 200),
        "subtitle": html(" · ".join(sub)),
        "gates": gates,
        "events": events,
        "houses": houses,
        "missing": missing,
        "folded": folded,
        "edges": edges,
        "top": ids.get(tree.top),
        "cut_sets": cut_rows,
        "cut_title": cut_title,
        "more_cut_sets": more,
        "analysed": a is not None,
        "refused": html_lines(f"analysis refused: {refused}", 70, 600)
        if refused
        else html_lines(f"cut sets not found: {a.cut_sets_refused}", 70, 600)
        if a is not None and a.cut_sets_refused
        else "",
        "spof_count": len(spofs),
        "ccf": ccf,
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


@register(
    "faulttree",
    order=40,
    source="seed 000 §3.4 (root 'service unavailable', leaves with a check command and its expected output)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Fault trees: every gate type, leaf checks with their next step, probabilities, cut sets."""
    return dict(faulttree_sources(ctx))
