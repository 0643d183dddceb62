"""Helpers shared by rules: id namespaces and reference targets of a spec."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from archkit.spec.model import Node, Spec
from archkit.spec.refs import class_refs, refs_of

if TYPE_CHECKING:  # the analyses are imported where they are used, so `archkit check` starts fast
    from archkit.checks.registry import Context
    from archkit.perf.branch_mix import Component, SinkMix
    from archkit.perf.capacity import StageCapacity
    from archkit.perf.latency import ControlPaths, PathLatency
    from archkit.perf.llm.analysis import LlmAnalysis
    from archkit.perf.retry import CallBudget
    from archkit.spec.dataflow import Stage


def id_namespaces(spec: Spec) -> Iterator[tuple[str, list[tuple[str, Node]]]]:
    """Each namespace in which ids must be unique, with its (id, member) pairs in document order.

    Derived from the model's `IdOf` marks (archkit.spec.refs), never listed here.
    """
    for label, members in refs_of(spec).namespaces():
        yield label, [(m.id, m) for m in members]


def control_successors(node: Node) -> list[tuple[str, str]]:
    """(field, target id) pairs leaving a control-flow node."""
    out: list[tuple[str, str]] = []
    for i, br in enumerate(getattr(node, "branches", []) or []):
        out.append((f"branches[{i}].next", br.next))
    for attr in ("next", "on_failure"):
        val = getattr(node, attr, None)
        if val:
            out.append((attr, val))
    return out


def reachable_control_nodes(spec: Spec) -> set[str]:
    """Ids reachable from `controlflow.start`, following branches, next, on_failure, and the
    nested calls (`caller:`) made while their caller's target runs."""
    cf = spec.controlflow
    nodes = spec.by_id("control-flow node")
    nested: dict[str, list[str]] = {}
    for call in cf.calls:
        if call.caller:
            nested.setdefault(call.caller, []).append(call.id)
    if not cf.start or cf.start not in nodes:
        return set()
    seen = {cf.start}
    todo = [cf.start]
    while todo:
        nid = todo.pop()
        for nxt in [t for _, t in control_successors(nodes[nid])] + nested.get(nid, []):
            if nxt in nodes and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


# ---------------------------------------------------------------- shared analyses (memoised)

SENSITIVE = {"biometric", "pii", "personal", "face", "voice", "health", "credentials"}
SPECIAL_CATEGORY = {"biometric", "face", "health"}  # GDPR Art. 9 special categories


def all_nodes(ctx: Context) -> list[Node]:
    """Every object of the spec, depth first in document order (as `spec.model.walk`), listed
    once per check run for the rules that look at every object (AK112, AK218)."""

    def build() -> list[Node]:
        out: list[Node] = []
        todo: list[object] = [ctx.spec]
        while todo:
            node = todo.pop()
            if isinstance(node, Node):
                out.append(node)
                # only the fields that can hold objects (archkit.spec.refs), in reverse for the stack
                todo.extend(getattr(node, name) for name in reversed(class_refs(type(node)).children))
            elif isinstance(node, list):
                todo.extend(reversed(node))
            elif isinstance(node, dict):
                todo.extend(reversed(list(node.values())))
        return out

    nodes: list[Node] = ctx.memo("nodes", build)
    return nodes


@cache
def fields_of(cls: type[Node], keys: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `keys` that objects of `cls` have, in the order given."""
    return tuple(k for k in keys if k in cls.model_fields)


def capacities(ctx: Context) -> list[StageCapacity]:
    """Capacity analysis of every model stage, computed once per check run."""
    from archkit.perf.capacity import model_capacities

    out: list[StageCapacity] = ctx.memo("capacity", lambda: model_capacities(ctx.spec, dataflow_latency(ctx)))
    return out


def dataflow_latency(ctx: Context) -> list[PathLatency]:
    """Critical data-flow path per sink, computed once per check run."""
    from archkit.perf.latency import dataflow_paths

    out: list[PathLatency] = ctx.memo("dataflow-paths", lambda: dataflow_paths(ctx.spec))
    return out


def sink_mixes(ctx: Context) -> list[SinkMix]:
    """Each sink's routes with their shares (`perf.branch_mix`), computed once per check run."""
    from archkit.perf.branch_mix import sink_mixes as build

    out: list[SinkMix] = ctx.memo("sink-mixes", lambda: build(ctx.spec))
    return out


def over_routes(m: SinkMix, c: Component, x: float, q: str, path_sum: float) -> tuple[str, dict[str, Any]]:
    """The head of an AK201/AK202 message, and its extra fields: the critical path's sum alone, or
    the mixture's quantile `x` over the routes into the sink with the path `c` that sets it."""
    p = c.path
    if len(m.components) == 1:
        return f"path {' -> '.join(p.stages)}: stage {q}s add up to {fmt_ms(path_sum)}", {}
    text = (
        f"the {q} over the {len(m.components)} routes into '{m.sink}' is {fmt_ms(x)}, set by "
        f"path {' -> '.join(p.stages)} ({100 * c.share:.3g} % of them; stage {q}s add up to "
        f"{fmt_ms(path_sum)})"
    )
    return text, {f"{q.lower()}_mixed_ms": round(x, 1), "share": round(c.share, 4)}


def control_latency(ctx: Context) -> ControlPaths:
    from archkit.perf.latency import control_paths

    out: ControlPaths = ctx.memo("control-paths", lambda: control_paths(ctx.spec))
    return out


def call_budgets(ctx: Context) -> list[CallBudget]:
    from archkit.perf.retry import call_budgets as cb

    out: list[CallBudget] = ctx.memo("call-budgets", lambda: cb(ctx.spec))
    return out


def stages_by_service(ctx: Context) -> dict[str, list[Stage]]:
    """service id -> stages it runs."""

    def build() -> dict[str, list[Stage]]:
        out: dict[str, list[Stage]] = {}
        for st in ctx.spec.dataflow.stages:
            if st.service:
                out.setdefault(st.service, []).append(st)
        return out

    by_service: dict[str, list[Stage]] = ctx.memo("stages-by-service", build)
    return by_service


def fmt_ms(v: float | None) -> str:
    """Milliseconds for messages: '47 ms', '431.7 ms', 'unbounded'."""
    import math

    if v is None or (isinstance(v, float) and math.isinf(v)):
        return "unbounded"
    return f"{v:.1f} ms" if abs(v - round(v)) > 0.05 else f"{round(v)} ms"


def is_sensitive(classes: Iterable[str]) -> set[str]:
    return {c.lower() for c in classes} & SENSITIVE


def llm_analyses(ctx: Context) -> list[LlmAnalysis]:
    """The LLM analysis of every `kind: llm` stage (no rate searches), computed once per check run."""
    from pathlib import Path

    from archkit.perf.llm.analysis import analyse_spec

    base = Path(ctx.file).parent if ctx.file else None
    out: list[LlmAnalysis] = ctx.memo("llm", lambda: analyse_spec(ctx.spec, base=base, search=False))
    return out
