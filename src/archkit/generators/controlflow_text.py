"""The control-flow diagram's annotation lines in plain words, drawn by PlantUML and by its Graphviz stand-in alike."""

from __future__ import annotations

from archkit.generators.diagram_text import num, pct
from archkit.spec.model import DegradeRule, Spec, Workflow


def workflow_line(wf: Workflow) -> str:
    """The line under each of a workflow's calls (seed 004 §2.2): the engine, the state store, the alert."""
    state = f"state in {wf.state.store}" if wf.state is not None else "state not persisted"
    alert = (
        "alert when retries run out" if wf.retries_exhausted is not None else "no alert when retries run out"
    )
    return f"workflow {wf.label or wf.id} ({wf.engine}) · {state} · {alert}"


def degrade_line(r: DegradeRule) -> str | None:
    """The line under a degrade rule's target (seed 004 §2.2, §3.2): its structured condition and
    action; None for a rule with only the free-text condition."""
    w = r.when
    if w is None:
        return None
    where = "".join(f" {k}={v}" for k, v in sorted(w.labels.items()))
    to = f" → {r.fallback}" if r.fallback else ""
    what = (
        f"P{w.percentile * 100:g} of {w.stage or w.metric}{where} > {num(w.above_ms, 'ms')}"
        if w.above_ms is not None
        else f"failure ratio of {w.stage}{where} > {pct(w.error_ratio_above or 0)}"
    )
    return f"degrade {r.id}: {what} over {w.window} → {r.action}{to}"


def node_notes(spec: Spec) -> dict[str, list[str]]:
    """Control node id -> its annotation lines: the workflow that runs it (the first that lists it),
    then each degrade rule that acts on it, in the spec's order."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for wf in spec.workflows:
        for sid in wf.steps:
            if sid not in seen:
                seen.add(sid)
                out.setdefault(sid, []).append(workflow_line(wf))
    for r in spec.policies.degrade:
        line = degrade_line(r)
        if line is not None and r.target:
            out.setdefault(r.target, []).append(line)
    return out
