"""Control-flow diagram (PlantUML activity): decisions, calls with timeouts/retries, failure paths."""

from __future__ import annotations

from typing import Any

from archkit.generators.controlflow_dot import controlflow_dot
from archkit.generators.diagram_text import clean, num, pct, wrap
from archkit.generators.jinja import plantuml_label, render
from archkit.generators.registry import RenderContext, register
from archkit.generators.renderers import register_fallback
from archkit.spec.model import Call, Decision, Terminal

# Seed 004 §2.1: failure branches must be drawn with arrows of a different colour, not left in
# a PRD footnote; every failure path here is a red dashed arrow.
FAIL_ARROW = "-[#d62728,dashed]->"
FAIL_LABEL = "<color:#d62728>**{}**</color>"  # failure branches' labels in the same red
# Text colours, not `#colour:` activity fills: PlantUML 1.2026.8 loses track of `switch` blocks
# in some nestings of filled activities ("Cannot find switch"), so fills are not used.
TERMINAL_COLOUR = {"success": "#15803d", "degraded": "#b45309", "rejected": "#b91c1c", "error": "#b91c1c"}
CALL_COLOUR = "#1d4ed8"


def puml(value: Any, width: int = 44, limit: int = 240) -> str:
    """Spec text for a PlantUML label: inert (no markup, directives or preprocessor calls), wrapped."""
    lines = []
    for line in wrap(value, width, limit):
        s = plantuml_label(clean(line))
        # parentheses end `if (...)`/`case (...)` texts; `%` starts preprocessor built-ins (%date())
        s = s.replace("(", "\u2768").replace(")", "\u2769").replace("%", "%\u200b").replace("~", "\u223c")
        lines.append(s)
    return "\\n".join(lines)


def styled(text: str, before: str, after: str) -> str:
    """Creole markup applies within one line: wrap each line of an already-escaped label."""
    return "\\n".join(f"{before}{line}{after}" for line in text.split("\\n"))


def _retry(c: Call) -> str:
    if c.retry is None:
        return "no retry policy"
    r = c.retry
    if r.attempts == 0:
        return "no retries"
    s = f"retry {r.attempts}× after {num(r.backoff_ms, 'ms')}"
    if r.backoff_multiplier != 1:
        s += f" ×{num(r.backoff_multiplier)}"
    if r.jitter:
        s += " + jitter"
    return s


def _call_text(c: Call) -> str:
    head = styled(puml(f"call {c.label or c.id}", 40), f"<color:{CALL_COLOUR}>**", "**</color>")
    lines = [head, puml(f"→ {c.target}" + ("" if not c.label else f" · {c.id}"), 44)]
    lines.append(puml(f"timeout {num(c.timeout_ms, 'ms')} · {_retry(c)}" if c.timeout_ms is not None
                      else f"no timeout · {_retry(c)}", 60))
    if c.circuit_breaker is not None:
        b = c.circuit_breaker
        lines.append(puml(f"breaker: opens at {pct(b.error_rate_threshold)} errors over {num(b.window_s)} s "
                          f"(≥ {b.min_requests} requests), open {num(b.open_s)} s", 60))
    if not c.idempotent:
        lines.append("//not idempotent//")
    return "\\n".join(lines)


def _decision_text(d: Decision) -> str:
    lines = [styled(puml(d.label or d.id, 40), "**", "**")]
    if d.label:
        lines.append(puml(d.id))
    lines.append(puml(f"criterion: {d.criterion}" if d.criterion else "criterion: (not given)", 44))
    lines.append(puml(f"source: {d.source}" if d.source else "source: (not given)", 44))
    if d.timeout_ms is not None:
        lines.append(puml(f"timeout {num(d.timeout_ms, 'ms')}"))
    return "\\n".join(lines)


class _Emitter:
    """Walks the control graph from `start`; a node reached again is drawn as a reference."""

    def __init__(self, ctx: RenderContext):
        self.spec = ctx.spec
        self.cf = ctx.spec.controlflow
        self.nodes: dict[str, Any] = {}
        for n in self.cf.nodes():
            self.nodes.setdefault(n.id, n)
        self.done: set[str] = set()
        self.reserved: set[str] = set()  # drawn after the enclosing switch: refer, do not expand
        self.lines: list[str] = []
        self.nested: dict[str, list[Call]] = {}
        for c in self.cf.calls:
            if c.caller:
                self.nested.setdefault(c.caller, []).append(c)

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def ref(self, depth: int, node_id: str, missing: bool = False) -> None:
        if missing:
            self.out(depth, f":<color:#6b7280>//undefined node {puml(node_id)}//</color>;")
        else:
            self.out(depth, f":<color:#6b7280>↪ continue at</color> {styled(puml(node_id), '**', '**')};")
        self.out(depth, "detach")

    def flow(self, node_id: str | None, depth: int) -> None:
        """Emit `node_id` and what follows it; every path ends in stop/end or detach."""
        while True:
            if node_id is None:
                self.out(depth, ":<color:#b45309>//no next step in the spec//</color>;")
                self.out(depth, "detach")
                return
            node = self.nodes.get(node_id)
            if node is None:
                self.ref(depth, node_id, missing=True)
                return
            if isinstance(node, Terminal):
                self.terminal(node, depth)
                return
            if node_id in self.done or node_id in self.reserved:
                self.ref(depth, node_id)
                return
            self.done.add(node_id)
            if isinstance(node, Call):
                self.out(depth, f":{_call_text(node)};")
                inner = self.nested.get(node.id)
                if inner:
                    self.out(depth, "note right")
                    for c in inner:
                        self.out(depth + 1, f"• nested {_call_text(c).replace(chr(92) + 'n', ' · ')}")
                    self.out(depth, "end note")
                if node.on_failure:
                    self.out(depth, f"if ({puml(node.id)} fails?) then ({FAIL_LABEL.format('error / timeout')})")
                    self.out(depth + 1, FAIL_ARROW)
                    self.flow(node.on_failure, depth + 1)
                    self.out(depth, "else (ok)")
                    self.out(depth, "endif")
                node_id = node.next
                continue
            # a decision. Its first branch that goes on to more steps is left empty inside the
            # switch and drawn after `endswitch`: the other branches end (stop/detach), so the
            # merge only carries that one, and a chain of decisions stays one column instead
            # of nesting ever deeper to the right.
            main = next((b for b in node.branches
                         if b.next in self.nodes and not isinstance(self.nodes[b.next], Terminal)
                         and b.next not in self.done), None)
            self.out(depth, f"switch ({_decision_text(node)})")
            if main is not None:
                self.reserved.add(main.next)  # other branches that reach it refer to it
            for b in node.branches:
                if main is None or b.next != main.next:
                    self.out(depth, f"case ({puml(b.when, 30)})")
                    self.flow(b.next, depth + 1)
            if node.on_failure:
                self.out(depth, f"case ({FAIL_LABEL.format('cannot decide')})")
                self.out(depth + 1, FAIL_ARROW)
                if main is not None and node.on_failure == main.next:
                    self.ref(depth + 1, node.on_failure)
                else:
                    self.flow(node.on_failure, depth + 1)
            if main is not None:  # last, on the right: every branch to the main target merges here
                whens = [b.when for b in node.branches if b.next == main.next]
                self.out(depth, f"case ({puml(' / '.join(whens), 30)})")
            if not node.branches and not node.on_failure:
                # PlantUML refuses a `detach` right after `case` ("kill cannot be used here"):
                # an activity first, which also says why the flow stops
                self.out(depth, "case (no branches)")
                self.out(depth + 1, ":<color:#b45309>//no branch in the spec: nothing follows//</color>;")
                self.out(depth + 1, "detach")
            self.out(depth, "endswitch")
            if main is None:
                return
            self.reserved.discard(main.next)
            node_id = main.next

    def terminal(self, t: Terminal, depth: int) -> None:
        colour = TERMINAL_COLOUR[t.outcome]
        text = (styled(puml(t.label or t.id, 40), f"<color:{colour}>**", "**</color>")
                + f"\\n<color:{colour}>{t.outcome}</color>"
                + (f" · status {t.status}" if t.status else ""))
        self.out(depth, f":{text};")
        self.out(depth, "stop" if t.outcome in ("success", "degraded") else "end")


def controlflow_view(ctx: RenderContext) -> dict[str, Any]:
    spec = ctx.spec
    cf = spec.controlflow
    em = _Emitter(ctx)
    start = cf.start
    if start is None:
        first = next(iter(cf.nodes()), None)
        start = first.id if first is not None else None
    if start is not None:
        em.flow(start, 0)
    unreachable = [n.id for n in cf.nodes()
                   if n.id not in em.done and not isinstance(n, Terminal) and not getattr(n, "caller", None)]
    title = spec.metadata.title or spec.metadata.name
    sub = f"deadline {num(cf.timeout_ms, 'ms')}" if cf.timeout_ms is not None else "no overall deadline"
    return {
        "header": ctx.header("'"),
        "title": puml(f"{title} — control flow", 80),
        "subtitle": puml(sub, 80),
        "empty": start is None,
        "lines": em.lines,
        "unreachable": puml(", ".join(unreachable), 80, 400) if unreachable else "",
    }


def controlflow_source(ctx: RenderContext) -> str:
    source = ctx.memo("controlflow.puml", lambda: render("controlflow/controlflow.puml.j2", ctx.templates_dir,
                                                         **controlflow_view(ctx)))
    # without a JVM the renderers draw this Graphviz version instead (its title says so)
    register_fallback(ctx.cache, source, lambda: controlflow_dot(ctx))
    return source


@register("controlflow", order=20)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Control flow (PlantUML activity): decisions with criterion and source, calls, fallbacks."""
    return {"controlflow.puml": controlflow_source(ctx)}
