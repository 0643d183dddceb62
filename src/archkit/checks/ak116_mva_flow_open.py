"""AK116: the stages marked as the minimum viable architecture do not close one scenario flow."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class MvaFlowOpen(Rule):
    """Stages marked `phase: mva` form no path from an entry stage to an exit stage of the data flow."""

    code = "AK116"
    name = "mva-flow-open"
    severity = Severity.WARNING
    source = "seed 004 §4.5 (the minimum viable architecture: only what closes the first scenario flow)"
    rationale = """
Seed 004 §4.5: successful AI systems start from a minimum viable architecture holding only
the components the first scenario flow needs to close; for the loan pre-approval service,
front-end upload → MinIO → Kafka → Triton OCR → Redis → API answer, with drift monitoring,
A/B tests and GPU forecasting left to the second phase. Mark those stages `phase: mva`: they
must then form a path in the data flow, over MVA stages only, from an entry stage (no edge
into it) to an exit stage (no edge out of it), or the MVA does not answer a single request.
An MVA stage that no such path passes through is reported as well: it is not needed yet.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        df = ctx.spec.dataflow
        mva = {s.id for s in df.stages if s.phase == "mva"}
        if not mva:
            return
        succ: dict[str, set[str]] = {}
        pred: dict[str, set[str]] = {}
        for e in df.edges:
            succ.setdefault(e.from_, set()).add(e.to)
            pred.setdefault(e.to, set()).add(e.from_)
        ids = [s.id for s in df.stages]
        entries = [i for i in ids if i in mva and not pred.get(i)]
        exits = {i for i in ids if i in mva and not succ.get(i)}

        def walk(starts: list[str], nxt: dict[str, set[str]]) -> set[str]:
            seen, todo = set(starts), list(starts)
            while todo:
                for n in nxt.get(todo.pop(), set()):
                    if n in mva and n not in seen:
                        seen.add(n)
                        todo.append(n)
            return seen

        forward = walk(entries, succ)
        on_path = forward & walk(sorted(exits & forward), pred)
        first = next(s for s in df.stages if s.id in mva)
        if not on_path:
            yield ctx.at(
                first,
                "phase",
                "no path over phase: mva stages leads from an entry stage to an exit stage: the minimum viable "
                "architecture does not close a scenario flow (seed 004 §4.5)",
            )
            return
        for st in df.stages:
            if st.id in mva and st.id not in on_path:
                yield ctx.at(
                    st,
                    "phase",
                    f"stage '{st.id}' is marked mva but lies on no MVA path from entry to exit (seed 004 §4.5)",
                )
