"""Helpers shared by rules: id namespaces and reference targets of a spec."""

from __future__ import annotations

from typing import Iterator

from archkit.spec.model import Node, Spec


def id_namespaces(spec: Spec) -> Iterator[tuple[str, list[Node]]]:
    """Each namespace in which ids must be unique, with its members in document order."""
    yield "stage", list(spec.dataflow.stages)
    yield "control-flow node", list(spec.controlflow.nodes())
    yield "node pool", list(spec.topology.node_pools)
    yield "network", list(spec.topology.networks)
    yield "storage", list(spec.topology.storage)
    yield "service", list(spec.topology.services)
    yield "fault tree", list(spec.faulttrees)
    for tree in spec.faulttrees:
        yield f"gate or event of fault tree '{tree.id}'", [*tree.gates, *tree.events]
    yield "degrade rule", list(spec.policies.degrade)
    yield "environment", list(spec.environments)
    if spec.loadtest:
        yield "load-test scenario", list(spec.loadtest.scenarios)
        yield "load-test level", list(spec.loadtest.levels)


def control_successors(node) -> list[tuple[str, str]]:
    """(field, target id) pairs leaving a control-flow node."""
    out: list[tuple[str, str]] = []
    for i, br in enumerate(getattr(node, "branches", []) or []):
        out.append((f"branches[{i}].next", br.next))
    for attr in ("next", "on_failure"):
        val = getattr(node, attr, None)
        if val:
            out.append((attr, val))
    return out


def any_ids(spec: Spec) -> set[str]:
    """Every id a policy may point at: stages, control nodes, services."""
    ids = {s.id for s in spec.dataflow.stages}
    ids |= {n.id for n in spec.controlflow.nodes()}
    ids |= {s.id for s in spec.topology.services}
    return ids
