"""Schema-valid specs at the edges: boundary rewrites of the examples, driven by the JSON Schema.

The mutation fuzzer (strategies.py) mostly makes specs that do not load; these all load. Each
draw takes an example (or the reference spec) and rewrites some of its numbers to the
boundaries its field's schema allows (minimum, maximum, just inside an exclusive bound, 1e-9,
a day in milliseconds), grows some of its lists, and may add a fault tree of the shapes that
broke the work promise (an AND of ORs: width**ors cut sets; a deep chain of gates). A draw
that the loader refuses is discarded (`assume`), so every spec that reaches the harness is
schema-valid: the classes issue 28's campaign found (deep and wide trees, degenerate
service-time tables, extreme limits) are in reach.
"""

from __future__ import annotations

import copy
import json
import math
from functools import lru_cache
from typing import Any

import yaml
from hypothesis import assume
from hypothesis import strategies as st

from archkit.spec import load_text
from tests.conftest import EXAMPLES, ROOT

SCHEMA = ROOT / "specs" / "archkit.schema.json"
BASES = [p for p in [*EXAMPLES, ROOT / "specs" / "ocr-reference.yaml"] if p.suffix == ".yaml"]
DAY_MS = 86_400_000.0


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def bases() -> tuple[tuple[str, dict[str, Any]], ...]:
    return tuple((p.stem, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in BASES)


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _branches(node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _deref(node)
    if "anyOf" in node:
        return [b for sub in node["anyOf"] for b in _branches(sub)]
    if "allOf" in node and len(node["allOf"]) == 1:
        return _branches(node["allOf"][0])
    return [node]


def schema_at(path: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The schema branches that may describe the value at `path` (empty: unknown)."""
    nodes = [_schema()]
    for key in path:
        nxt: list[dict[str, Any]] = []
        for n in (b for node in nodes for b in _branches(node)):
            if isinstance(key, int) and "items" in n:
                nxt.append(n["items"])
            elif isinstance(key, str) and key in n.get("properties", {}):
                nxt.append(n["properties"][key])
            elif isinstance(key, str) and isinstance(n.get("additionalProperties"), dict):
                nxt.append(n["additionalProperties"])
        nodes = nxt
    return [b for node in nodes for b in _branches(node)]


def boundaries(branches: list[dict[str, Any]], value: float | int) -> list[float | int]:
    """The edge values the schema allows for a number like `value`."""
    out: list[float | int] = []
    for b in branches:
        if b.get("type") not in ("integer", "number"):
            continue
        integer = b["type"] == "integer"
        lo, hi = b.get("minimum"), b.get("maximum")
        xlo, xhi = b.get("exclusiveMinimum"), b.get("exclusiveMaximum")
        if lo is not None:
            out += [lo, lo + 1] if integer else [lo, lo + 1e-9]
        if hi is not None:
            out += [hi, hi - 1] if integer else [hi, hi * (1 - 1e-9)]
        if xlo is not None:
            out.append(xlo + 1 if integer else (xlo + 1e-9 if xlo == 0 else math.nextafter(xlo, math.inf)))
        if xhi is not None:
            out.append(xhi - 1 if integer else math.nextafter(xhi, -math.inf))
        if not integer:
            out += [1e-9, DAY_MS, 0.5]
        else:
            out += [1, 2, 1024, 10**6]
    return [v for v in out if isinstance(v, int | float) and math.isfinite(v)]


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        return [leaf for k, v in node.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [leaf for i, v in enumerate(node) for leaf in _leaves(v, (*path, i))]
    return [(path, node)]


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def and_of_ors(tid: str, ors: int, width: int) -> dict[str, Any]:
    gates = [{"id": f"{tid}-top", "type": "and", "inputs": [f"{tid}-g{i}" for i in range(ors)]}]
    events = []
    for i in range(ors):
        gates.append({"id": f"{tid}-g{i}", "type": "or", "inputs": [f"{tid}-e{i}-{j}" for j in range(width)]})
        events += [{"id": f"{tid}-e{i}-{j}", "probability": 0.01} for j in range(width)]
    return {"id": tid, "top": f"{tid}-top", "gates": gates, "events": events}


def gate_chain(tid: str, depth: int, kind: str) -> dict[str, Any]:
    gates = [
        {"id": f"{tid}-c{i}", "type": kind, "inputs": [f"{tid}-c{i + 1}", f"{tid}-x{i}"]}
        for i in range(depth - 1)
    ]
    gates.append({"id": f"{tid}-c{depth - 1}", "type": "or", "inputs": [f"{tid}-x{depth - 1}"]})
    events = [{"id": f"{tid}-x{i}", "probability": 0.001} for i in range(depth)]
    return {"id": tid, "top": f"{tid}-c0", "gates": gates, "events": events}


@st.composite
def schema_valid_spec(draw: st.DrawFn) -> str:
    """A spec text that loads (schema and model), with boundary values and hard shapes."""
    name, base = draw(st.sampled_from(bases()), label="base")
    doc = copy.deepcopy(base)
    numbers = [(p, v) for p, v in _leaves(doc) if isinstance(v, int | float) and not isinstance(v, bool)]
    for _ in range(draw(st.integers(1, 12), label="rewrites")):
        if not numbers:
            break
        path, value = draw(st.sampled_from(numbers))
        edges = boundaries(schema_at(path), value)
        if edges:
            _set(doc, path, draw(st.sampled_from(edges)))
    lists = [(p, v) for p, v in _walk_lists(doc) if v and p and p[-1] in ("stages", "service_time", "events")]
    if lists and draw(st.booleans()):
        path, items = draw(st.sampled_from(lists))
        if path[-1] == "service_time":  # a degenerate table: the batch sizes doubled, extreme times
            grown = [
                {"batch_size": 2**i, "compute_ms": draw(st.sampled_from([1e-9, 1.0, DAY_MS]))}
                for i in range(draw(st.integers(1, 11)))
            ]
            _set(doc, path, grown)
    shape = draw(st.sampled_from(["none", "wide", "deep-or", "deep-and"]), label="tree shape")
    if shape != "none":
        trees = doc.setdefault("faulttrees", [])
        if shape == "wide":
            trees.append(and_of_ors("fz", draw(st.integers(2, 10)), draw(st.integers(2, 5))))
        else:
            trees.append(gate_chain("fz", draw(st.integers(2, 1500)), shape.split("-")[1]))
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    assume(load_text(text, f"{name}.yaml").spec is not None)
    return text


def _walk_lists(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], list[Any]]]:
    out: list[tuple[tuple[Any, ...], list[Any]]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _walk_lists(v, (*path, k))
    elif isinstance(node, list):
        out.append((path, node))
        for i, v in enumerate(node):
            out += _walk_lists(v, (*path, i))
    return out
