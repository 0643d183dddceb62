"""One phase of a design on its own (seed 004 §4.5): the stages marked `phase: mva` and what they run on.

Seed 004 §4.5 builds the minimum viable architecture first, only what closes the first scenario
flow. `archkit render --phase mva` draws that part alone: the stages of the phase, the edges
between them, the services they run on and those services' node pools. AK116 checks that the
stages form a path from an entry to an exit.
"""

from __future__ import annotations

from typing import Literal

from archkit.spec.model import Spec

__all__ = ["PHASES", "Phase", "of_phase"]

Phase = Literal["mva", "later"]
PHASES: tuple[Phase, ...] = ("mva", "later")
TITLES = {"mva": "minimum viable architecture (phase: mva)", "later": "later phase (phase: later)"}


def of_phase(spec: Spec, phase: Phase) -> Spec:
    """A copy of `spec` holding only one phase's stages, their edges, services and pools."""
    df, topo = spec.dataflow, spec.topology
    stages = [s for s in df.stages if s.phase == phase]
    ids = {s.id for s in stages}
    services = [v for v in topo.services if v.id in {s.service for s in stages if s.service}]
    pools = [p for p in topo.node_pools if p.id in {v.pool for v in services}]
    title = f"{spec.metadata.title or spec.metadata.name} — {TITLES[phase]}"
    clone = spec.model_copy(
        update={
            "metadata": spec.metadata.model_copy(update={"title": title}),
            "dataflow": df.model_copy(
                update={"stages": stages, "edges": [e for e in df.edges if e.from_ in ids and e.to in ids]}
            ),
            "topology": topo.model_copy(update={"services": services, "node_pools": pools}),
        }
    )
    clone.__dict__.pop("_archkit_index", None)  # lookups (Spec.by_id) are rebuilt for the copy
    return clone
