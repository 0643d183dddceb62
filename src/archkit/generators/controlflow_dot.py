"""The control flow as a Graphviz graph: drawn instead of the PlantUML activity when no JVM is here.

Same content as the PlantUML diagram (decisions with criterion and source, calls with timeout
and retries, failure paths as red dashed arrows, seed 004 §2.1; the workflow that runs a call and
the degrade rules that act on a node, in italics under it, seed 004 §2.2, §3.2), in a simpler
layout; its title says it is the Graphviz stand-in, so nobody mistakes it for the real diagram.
"""

from __future__ import annotations

from archkit.generators.controlflow_text import node_notes
from archkit.generators.diagram_text import html, html_lines, num
from archkit.generators.registry import RenderContext
from archkit.spec.model import Call, Decision, Terminal

FAIL = 'color="#d62728", fontcolor="#d62728", style=dashed'
TERMINAL_COLOUR = {"success": "#15803d", "degraded": "#b45309", "rejected": "#b91c1c", "error": "#b91c1c"}
TITLE_NOTE = "drawn by Graphviz: PlantUML (Java) is not available here"


def _retry(c: Call) -> str:
    if c.retry is None:
        return "no retry policy"
    if c.retry.attempts == 0:
        return "no retries"
    return f"retry {c.retry.attempts}× after {num(c.retry.backoff_ms, 'ms')}"


def _label(node: Decision | Call | Terminal, notes: list[str]) -> str:
    head = f"<B>{html_lines(node.label or node.id, 40)}</B>"
    lines: list[str] = []
    if isinstance(node, Decision):
        lines.append(html_lines(f"criterion: {node.criterion or '(not given)'}", 44))
        lines.append(html_lines(f"source: {node.source or '(not given)'}", 44))
        if node.timeout_ms is not None:
            lines.append(html(f"timeout {num(node.timeout_ms, 'ms')}"))
    elif isinstance(node, Call):
        head = f"<B>{html_lines(f'call {node.label or node.id}', 40)}</B>"
        lines.append(html_lines(f"→ {node.target}", 44))
        timeout = f"timeout {num(node.timeout_ms, 'ms')}" if node.timeout_ms is not None else "no timeout"
        lines.append(html_lines(f"{timeout} · {_retry(node)}", 60))
        if not node.idempotent:
            lines.append("<I>not idempotent</I>")
    else:
        status = f" · status {node.status}" if node.status else ""
        lines.append(html(f"{node.outcome}{status}"))
    lines.extend(f"<I>{html_lines(note, 60)}</I>" for note in notes)
    return "<" + "<BR/>".join([head, *lines]) + ">"


def controlflow_dot(ctx: RenderContext) -> str:
    """DOT source of the spec's control flow, for `dot`."""
    spec = ctx.spec
    cf = spec.controlflow
    notes = node_notes(spec)
    ids: dict[str, str] = {}
    nodes: list[str] = []
    for n in cf.nodes():
        if n.id in ids:
            continue
        ids[n.id] = f"n{len(ids)}"
        if isinstance(n, Decision):
            shape = 'shape=diamond, style=filled, fillcolor="#fef3c7"'
        elif isinstance(n, Call):
            shape = 'shape=box, style="rounded,filled", fillcolor="#dbeafe"'
        else:
            shape = f'shape=ellipse, color="{TERMINAL_COLOUR[n.outcome]}", fontcolor="{TERMINAL_COLOUR[n.outcome]}"'
        nodes.append(f"  {ids[n.id]} [label={_label(n, notes.get(n.id, []))}, {shape}];")
    edges: list[str] = []
    missing: dict[str, str] = {}

    def ref(target: str) -> str:
        if target not in ids and target not in missing:
            missing[target] = f"m{len(missing)}"
        return ids.get(target) or missing[target]

    if cf.start is not None:
        edges.append(f"  start -> {ref(cf.start)};")
    for n in cf.nodes():
        src = ids[n.id]
        if isinstance(n, Decision):
            for b in n.branches:
                edges.append(f"  {src} -> {ref(b.next)} [label=<{html_lines(b.when, 30)}>];")
            if n.on_failure:
                edges.append(f"  {src} -> {ref(n.on_failure)} [label=<cannot decide>, {FAIL}];")
        elif isinstance(n, Call):
            if n.next:
                edges.append(f"  {src} -> {ref(n.next)};")
            if n.on_failure:
                edges.append(f"  {src} -> {ref(n.on_failure)} [label=<error / timeout>, {FAIL}];")
            if n.caller:
                edges.append(f'  {ref(n.caller)} -> {src} [style=dotted, label=<nested>, color="#6b7280"];')
    title = spec.metadata.title or spec.metadata.name
    sub = f"deadline {num(cf.timeout_ms, 'ms')}" if cf.timeout_ms is not None else "no overall deadline"
    lines = [
        ctx.header("//"),
        "digraph controlflow {",
        '  graph [rankdir=TB, fontname="DejaVu Sans", fontsize=12, labelloc=t, labeljust=l, pad=0.2,',
        f'         label=<<B>{html(f"{title} — control flow")}</B><BR/><FONT POINT-SIZE="10">'
        f"{html(sub)} · {html(TITLE_NOTE)}</FONT>>];",
        '  node [fontname="DejaVu Sans", fontsize=10, margin="0.12,0.06"];',
        '  edge [fontname="DejaVu Sans", fontsize=8, color="#4b5563", arrowsize=0.7];',
        '  start [shape=circle, label="", width=0.2, style=filled, fillcolor="#111827"];'
        if cf.start is not None
        else '  empty [shape=plaintext, label="no start node in this spec"];',
        *nodes,
        *(
            f'  {mid} [label=<{html(f"undefined node {nid}")}>, style=dashed, color="#9ca3af"];'
            for nid, mid in missing.items()
        ),
        *edges,
        "}",
    ]
    return "\n".join(lines) + "\n"
