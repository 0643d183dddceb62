"""AK103: a reference names an id that does not exist."""

import difflib

from archkit.checks.common import any_ids
from archkit.checks.registry import Rule, register


@register
class DanglingReference(Rule):
    """A reference (edge, service pool, call target, fault-tree input, ...) names no existing object."""

    code = "AK103"
    name = "dangling-reference"
    source = "design principle D3 (docs/sources.md): every cross-reference by id"
    rationale = """
Edges must join stages, services must sit on declared pools, calls must target stages or
services, fault trees must belong to services and gates must have existing inputs. A
dangling reference means a diagram with a missing box and a check that cannot run.
"""

    def check(self, ctx):
        spec = ctx.spec
        stages = {s.id for s in spec.dataflow.stages}
        services = {s.id for s in spec.topology.services}
        pools = {p.id for p in spec.topology.node_pools}
        networks = {n.id for n in spec.topology.networks}
        storage = {s.id for s in spec.topology.storage}
        control = {n.id for n in spec.controlflow.nodes()}
        calls = {c.id for c in spec.controlflow.calls}

        def ref(obj, field, value, known, what):
            if value is not None and value not in known:
                close = difflib.get_close_matches(value, sorted(known), n=1)
                hint = (
                    f"did you mean '{close[0]}'?"
                    if close
                    else (f"known: {', '.join(sorted(known))}" if known and len(known) <= 8 else "")
                )
                return ctx.at(obj, field, f"{what} '{value}' is not defined", hint=hint)
            return None

        checks = []
        for e in spec.dataflow.edges:
            checks += [ref(e, "from", e.from_, stages, "stage"), ref(e, "to", e.to, stages, "stage")]
        for s in spec.dataflow.stages:
            checks.append(ref(s, "service", s.service, services, "service"))
        for svc in spec.topology.services:
            checks.append(ref(svc, "pool", svc.pool, pools, "node pool"))
            for m in svc.mounts:
                checks.append(ref(m, "storage", m.storage, storage, "storage"))
        for p in spec.topology.node_pools:
            for i, n in enumerate(p.networks):
                checks.append(ref(p.spec_path + ("networks",), i, n, networks, "network"))
        cf = spec.controlflow
        checks.append(ref(cf, "start", cf.start, control, "control-flow node"))
        for d in cf.decisions:
            for br in d.branches:
                checks.append(ref(br, "next", br.next, control, "control-flow node"))
            checks.append(ref(d, "on_failure", d.on_failure, control, "control-flow node"))
        for c in cf.calls:
            checks.append(ref(c, "target", c.target, stages | services, "stage or service"))
            checks.append(ref(c, "next", c.next, control, "control-flow node"))
            checks.append(ref(c, "on_failure", c.on_failure, control, "control-flow node"))
            checks.append(ref(c, "caller", c.caller, calls, "call"))
        for t in spec.faulttrees:
            checks.append(ref(t, "service", t.service, services, "service"))
            members = {g.id for g in t.gates} | {e.id for e in t.events}
            checks.append(ref(t, "top", t.top, members, "gate or event"))
            for g in t.gates:
                for i, inp in enumerate(g.inputs):
                    checks.append(ref(g.spec_path + ("inputs",), i, inp, members, "gate or event"))
        for sm in spec.observability.stages:
            checks.append(ref(sm, "stage", sm.stage, stages, "stage"))
        for st in spec.observability.scrape:
            checks.append(ref(st, "service", st.service, services, "service"))
        targets = any_ids(spec)
        for rule in spec.policies.degrade:
            checks.append(ref(rule, "target", rule.target, targets, "stage, control node or service"))
            checks.append(ref(rule, "fallback", rule.fallback, targets, "stage, control node or service"))
        if spec.loadtest:
            checks.append(
                ref(spec.loadtest.target, "service", spec.loadtest.target.service, services, "service")
            )
            for lvl in spec.loadtest.levels:
                for f in lvl.faults:
                    checks.append(ref(f, "target", f.target, services, "service"))
                    checks.append(ref(f, "expect_fallback", f.expect_fallback, control, "control-flow node"))
        for env in spec.environments:
            for ov in env.stages:
                checks.append(ref(ov, "stage", ov.stage, stages, "stage"))
        return [c for c in checks if c is not None]
