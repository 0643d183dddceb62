"""Control-flow diagram (PlantUML activity): decisions, calls with timeouts/retries, failure paths."""

from __future__ import annotations

from typing import Any

from archkit.generators.controlflow_dot import controlflow_dot
from archkit.generators.controlflow_text import node_notes
from archkit.generators.diagram_text import num, pct, wrap
from archkit.generators.jinja import render
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


# Characters that PlantUML reads as syntax, written as numeric character references: the
# diagram then shows the plain ASCII operator (PlantUML 1.2026.8 turns `&#60;` into `<`) and no
# spec text can end an `if (...)`, start creole markup or call the preprocessor.
_ENTITY = {c: f"&#{ord(c)};" for c in "&#;|<>[]{}()%~@!*/_\"'-=^$\\:"}


def puml(value: Any, width: int = 44, limit: int = 240) -> str:
    """Spec text for a PlantUML label: inert (no markup, directives or preprocessor calls), wrapped
    at word boundaries, its operators plain ASCII."""
    return "\\n".join("".join(_ENTITY.get(ch, ch) for ch in line) for line in wrap(value, width, limit))


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
    lines.append(
        puml(
            f"timeout {num(c.timeout_ms, 'ms')} · {_retry(c)}"
            if c.timeout_ms is not None
            else f"no timeout · {_retry(c)}",
            60,
        )
    )
    if c.circuit_breaker is not None:
        b = c.circuit_breaker
        lines.append(
            puml(
                f"breaker: opens at {pct(b.error_rate_threshold)} errors over {num(b.window_s)} s "
                f"(>= {b.min_requests} requests), open {num(b.open_s)} s",
                60,
            )
        )
    if not c.idempotent:
        lines.append("//not idempotent//")
    return "\\n".join(lines)


def _italic(line: str) -> str:
    """An annotation line (a workflow, a degrade rule) in italics under its node."""
    return styled(puml(line, 60), "//", "//")


def _decision_text(d: Decision) -> str:
    lines = [styled(puml(d.label or d.id, 40), "**", "**")]
    if d.label:
        lines.append(puml(d.id))
    lines.append(puml(f"criterion: {d.criterion}" if d.criterion else "criterion: (not given)", 44))
    lines.append(puml(f"source: {d.source}" if d.source else "source: (not given)", 44))
    if d.timeout_ms is not None:
        lines.append(puml(f"timeout {num(d.timeout_ms, 'ms')}"))
    return "\\n".join(lines)


def _groups(d: Decision) -> list[tuple[str | None, list[str], bool]]:
    """A decision's outgoing edges, one per target: (target, labels, failure-only)."""
    out: dict[str | None, list[str]] = {}
    for b in d.branches:
        out.setdefault(b.next, []).append(puml(b.when, 30))
    fail_only = False
    if d.on_failure:
        # "cannot decide" joins the branch that goes the same way instead of repeating it
        if d.on_failure in out:
            out[d.on_failure].append(FAIL_LABEL.format("cannot decide"))
        else:
            out[d.on_failure] = [FAIL_LABEL.format("cannot decide")]
            fail_only = True
    return [(t, labels, fail_only and t == d.on_failure) for t, labels in out.items()]


class _Emitter:
    """Draws the happy path as one straight column; fallbacks branch off to the side.

    The happy path follows `next` and, at a decision, the first branch that can still reach a
    success terminal. Side paths never draw a happy-path node: they end in "rejoin at X". The
    non-success terminal that most side paths reach is drawn once, after a `repeat` block that
    wraps the whole flow: each side path reaches it by `break`, an edge of its own (PlantUML's
    activity syntax has no other way to join two branches that are not nested in one another).
    """

    def __init__(self, ctx: RenderContext):
        self.cf = ctx.spec.controlflow
        self.nodes: dict[str, Any] = {}
        for n in self.cf.nodes():
            self.nodes.setdefault(n.id, n)
        self.done: set[str] = set()
        self.lines: list[str] = []
        self.nested: dict[str, list[Call]] = {}
        for c in self.cf.calls:
            if c.caller:
                self.nested.setdefault(c.caller, []).append(c)
        self.happy: list[str] = []
        self.shared: str | None = None
        # seed 004 §2.2: which workflow runs each call, with where its state lives and its alert;
        # seed 004 §3.2: a degrade rule's structured condition, drawn on the node it acts on
        self.notes = {k: [_italic(x) for x in v] for k, v in node_notes(ctx.spec).items()}

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def _succ(self, node_id: str) -> list[str]:
        n = self.nodes.get(node_id)
        if isinstance(n, Call):
            return [x for x in (n.next, n.on_failure) if x]
        if isinstance(n, Decision):
            return [x for x in [b.next for b in n.branches] + [n.on_failure] if x]
        return []

    def plan(self, start: str) -> None:
        # steps along the longest non-failure path to a success terminal (capped: a cycle, an
        # AK104 error, cannot grow it forever); a decision's happy branch is its longest one, so
        # a shortcut such as a cache hit branches off and the full pipeline stays in the column
        cap = len(self.nodes) + 1
        depth = {t.id: 0 for t in self.cf.terminals if t.outcome == "success"}
        for _ in range(cap):
            changed = False
            for n in self.cf.nodes():
                nxt = (
                    [n.next]
                    if isinstance(n, Call)
                    else [b.next for b in n.branches]
                    if isinstance(n, Decision)
                    else []
                )
                best = max((depth[x] + 1 for x in nxt if x in depth), default=None)
                if best is not None and min(best, cap) > depth.get(n.id, -1):
                    depth[n.id] = min(best, cap)
                    changed = True
            if not changed:
                break
        node_id: str | None = start
        while node_id is not None and node_id in self.nodes and node_id not in self.happy:
            self.happy.append(node_id)
            n = self.nodes[node_id]
            if isinstance(n, Call):
                node_id = n.next
            elif isinstance(n, Decision):
                targets = [b.next for b in n.branches if b.next not in self.happy]
                ranked = sorted(targets, key=lambda t: -depth.get(t, -1))
                node_id = ranked[0] if ranked else None
            else:
                node_id = None
        # the terminal most edges off the happy path end in (reached twice or more)
        seen: set[str] = set()
        # (edges counted once per node: a branch and "cannot decide" to one terminal are one edge)
        todo = [x for h in self.happy for x in dict.fromkeys(self._succ(h)) if x not in self.happy]
        hits: dict[str, int] = {}
        while todo:
            x = todo.pop(0)
            t = self.nodes.get(x)
            if isinstance(t, Terminal):
                hits[x] = hits.get(x, 0) + 1
                continue
            if x in seen or x in self.happy:
                continue
            seen.add(x)
            todo.extend(dict.fromkeys(self._succ(x)))
        by_hits = sorted((-c, k) for k, c in hits.items() if c >= 2)
        self.shared = by_hits[0][1] if by_hits else None

    def ref(self, depth: int, node_id: str, missing: bool = False) -> None:
        if missing:
            self.out(depth, f":<color:#6b7280>//undefined node {puml(node_id)}//</color>;")
        else:
            self.out(depth, f":<color:#6b7280>rejoin at</color> {styled(puml(node_id), '**', '**')};")
        self.out(depth, "detach")

    def call(self, node: Call, depth: int) -> None:
        extra = self.notes.get(node.id, [])
        self.out(depth, f":{_call_text(node)}" + "".join(f"\\n{x}" for x in extra) + ";")
        inner = self.nested.get(node.id)
        if inner:
            self.out(depth, "note right")
            for c in inner:
                self.out(depth + 1, f"* nested {_call_text(c).replace(chr(92) + 'n', ' - ')}")
            self.out(depth, "end note")

    def main(self, start: str) -> None:
        """The happy path, top to bottom, each fallback a side branch."""
        self.plan(start)
        if self.shared is not None:
            self.out(0, "repeat")
        for k, node_id in enumerate(self.happy):
            node = self.nodes[node_id]
            nxt = self.happy[k + 1] if k + 1 < len(self.happy) else None
            self.done.add(node_id)
            if isinstance(node, Terminal):
                self.terminal(node, 1)
                break
            if isinstance(node, Call):
                self.call(node, 1)
                if node.on_failure:
                    self.out(1, f"if ({puml(node.id)} fails?) then ({FAIL_LABEL.format('error / timeout')})")
                    self.out(2, FAIL_ARROW)
                    self.side(node.on_failure, 2)
                    self.out(1, "else (ok)")
                    self.out(1, "endif")
                if node.next is None:
                    self.side(None, 1)
            else:
                self.decision(node, 1, nxt)
        else:
            if self.happy:
                self.side(None, 1)
        if self.shared is not None:
            # the loop's condition is never true: its back edge is hidden, its diamond says why
            self.out(0, "repeat while (fallbacks end below) is (never) -[hidden]->")
            self.terminal(self.nodes[self.shared], 0)

    def decision_text(self, node: Decision) -> str:
        return "\\n".join([_decision_text(node), *self.notes.get(node.id, [])])

    def decision(self, node: Decision, depth: int, main_next: str | None) -> None:
        groups = _groups(node)
        main = next((labels for t, labels, _ in groups if t == main_next), None)
        if main is not None and len(groups) == 1:  # every answer goes on: a box, not a fork
            self.out(depth, f":{self.decision_text(node)}\\n//every answer goes on:// {' / '.join(main)};")
            return
        if main is not None and len(groups) == 2:
            # an if, not a one-sided switch: PlantUML 1.2026.8 draws a `break` out of a switch
            # case without its edge, and out of an if with it
            target, labels, fail_only = next(g for g in groups if g[0] != main_next)
            self.out(depth, f"if ({self.decision_text(node)}) then ({' / '.join(labels)})")
            if fail_only:
                self.out(depth + 1, FAIL_ARROW)
            self.side(target, depth + 1)
            self.out(depth, f"else ({' / '.join(main)})")
            self.out(depth, "endif")
            return
        self.out(depth, f"switch ({self.decision_text(node)})")
        for target, labels, fail_only in groups:
            if target == main_next:
                continue
            self.out(depth, f"case ({' / '.join(labels)})")
            if fail_only:
                self.out(depth + 1, FAIL_ARROW)
            self.side(target, depth + 1)
        if main is not None:  # last, so the column goes on below the merge
            self.out(depth, f"case ({' / '.join(main)})")
        if not groups:
            self.no_branches(depth)
        self.out(depth, "endswitch")

    def no_branches(self, depth: int) -> None:
        """A decision without branches (AK106/AK107 report it): the flow stops at it.

        PlantUML refuses a `detach` right after `case` ("kill cannot be used here", and render
        wrote nothing): an activity comes first, which also says why the flow stops.
        """
        self.out(depth, "case (no branches)")
        self.out(depth + 1, ":<color:#b45309>//no branch in the spec: nothing follows//</color>;")
        self.out(depth + 1, "detach")

    def side(self, node_id: str | None, depth: int) -> None:
        """A path off the happy path: drawn until it ends, rejoins, or reaches the shared terminal."""
        while True:
            if node_id is None:
                self.out(depth, ":<color:#b45309>//no next step in the spec//</color>;")
                self.out(depth, "detach")
                return
            node = self.nodes.get(node_id)
            if node is None:
                self.ref(depth, node_id, missing=True)
                return
            if node_id == self.shared:
                self.out(depth, "break")
                return
            if isinstance(node, Terminal):
                self.terminal(node, depth)
                return
            if node_id in self.happy or node_id in self.done:
                self.ref(depth, node_id)
                return
            self.done.add(node_id)
            if isinstance(node, Call):
                self.call(node, depth)
                if node.on_failure:
                    self.out(
                        depth, f"if ({puml(node.id)} fails?) then ({FAIL_LABEL.format('error / timeout')})"
                    )
                    self.out(depth + 1, FAIL_ARROW)
                    self.side(node.on_failure, depth + 1)
                    self.out(depth, "else (ok)")
                    self.out(depth, "endif")
                node_id = node.next
                continue
            groups = _groups(node)
            if len(groups) == 2:  # an if: PlantUML draws a `break` edge out of it (not out of a switch)
                for k, (target, labels, fail_only) in enumerate(groups):
                    self.out(
                        depth,
                        f"if ({self.decision_text(node)}) then ({' / '.join(labels)})"
                        if k == 0
                        else f"else ({' / '.join(labels)})",
                    )
                    if fail_only:
                        self.out(depth + 1, FAIL_ARROW)
                    self.side(target, depth + 1)
                self.out(depth, "endif")
                return
            self.out(depth, f"switch ({self.decision_text(node)})")
            for target, labels, fail_only in groups:
                self.out(depth, f"case ({' / '.join(labels)})")
                if fail_only:
                    self.out(depth + 1, FAIL_ARROW)
                self.side(target, depth + 1)
            if not node.branches and not node.on_failure:
                self.no_branches(depth)
            self.out(depth, "endswitch")
            return

    def terminal(self, t: Terminal, depth: int) -> None:
        colour = TERMINAL_COLOUR[t.outcome]
        text = (
            styled(puml(t.label or t.id, 40), f"<color:{colour}>**", "**</color>")
            + f"\\n<color:{colour}>{t.outcome}</color>"
            + (f" · status {t.status}" if t.status else "")
        )
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
        em.main(start)
    unreachable = [
        n.id
        for n in cf.nodes()
        if n.id not in em.done and not isinstance(n, Terminal) and not getattr(n, "caller", None)
    ]
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
    source = ctx.memo(
        "controlflow.puml",
        lambda: render("controlflow/controlflow.puml.j2", ctx.templates_dir, **controlflow_view(ctx)),
    )
    # without a JVM the renderers draw this Graphviz version instead (its title says so)
    register_fallback(ctx.cache, source, lambda: controlflow_dot(ctx))
    return source


@register(
    "controlflow",
    order=20,
    source="seed 000 §3.2 (decisions with criterion and source, calls with timeout and retry, degradation paths); seed 004 §2.1",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Control flow (PlantUML activity): decisions with criterion and source, calls, fallbacks."""
    return {"controlflow.puml": controlflow_source(ctx)}
