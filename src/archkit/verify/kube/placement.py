"""Where a service's pods land: pinned to their pool (VK113), tolerating its taints (VK114), on it (VK115)."""

from __future__ import annotations

from archkit.spec.model import Taint
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import (
    WELL_KNOWN,
    dict_matches,
    labels_text,
    match_expression,
    meta,
    pod_spec,
    selector_matches,
    taint,
)
from archkit.verify.registry import Code


class Placement(ServiceCheck):
    """A nodeSelector or required node affinity pins the pods to their pool's nodes, and only those."""

    code = Code(
        "VK113",
        "placement on pool",
        "A nodeSelector or required node affinity must pin the pods to the labels of their pool "
        "(hardware-type labels).",
        "seed 004 §2.3",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, wl, where, pool = ctx.rec, t.label, t.svc, t.wl, t.where, t.pool
        if pool is None:
            return
        ps = pod_spec(wl)
        selector = ps.get("nodeSelector") or {}
        terms = (
            ((ps.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms") or []

        def lands(labels: dict) -> bool:
            if not dict_matches(selector, labels):
                return False
            return not terms or any(
                all(match_expression(e, labels) for e in term.get("matchExpressions") or []) for term in terms
            )

        shown = (f"nodeSelector {labels_text(selector)}" if selector else "") + (
            " and required node affinity" if terms and selector else "required node affinity" if terms else ""
        )
        if not pool.labels:
            r.unknown(
                self.code,
                label,
                svc,
                f"pool '{pool.id}' declares no labels to select it by",
                field="pool",
                where=where,
            )
        elif not selector and not terms:
            r.drift(
                self.code,
                label,
                svc,
                f"service '{svc.id}' has no nodeSelector or required node affinity: its pods can land on any "
                f"node, not only on pool '{pool.id}' ({labels_text(pool.labels)})",
                field="pool",
                where=where,
            )
        elif ctx.state.usable("Node") and ctx.idx.nodes:
            inside = ctx.pool_nodes(pool)
            inside_ids = {id(n) for n in inside}
            outside = [n for n in ctx.idx.nodes.values() if id(n) not in inside_ids]
            hits_in = [n for n in inside if lands(meta(n).get("labels") or {})]
            hits_out = sorted(meta(n).get("name", "?") for n in outside if lands(meta(n).get("labels") or {}))
            if inside and not hits_in:
                r.drift(
                    self.code,
                    label,
                    svc,
                    f"{shown} of '{svc.id}' matches no node of pool '{pool.id}' "
                    f"({labels_text(pool.labels)}): the pods stay Pending or land elsewhere",
                    field="pool",
                    where=where,
                )
            elif hits_out:
                r.drift(
                    self.code,
                    label,
                    svc,
                    f"{shown} of '{svc.id}' also matches nodes outside pool '{pool.id}' "
                    f"({', '.join(hits_out[:5])})",
                    field="pool",
                    where=where,
                )
            else:
                r.ok(self.code, label, svc, f"{shown} selects pool '{pool.id}'", field="pool", where=where)
        else:
            pool_labels = dict(pool.labels)
            # without nodes, well-known labels cannot be known; assume they match
            relaxed = {k: v for k, v in selector.items() if not k.startswith(WELL_KNOWN) or k in pool_labels}
            ok_sel = dict_matches(relaxed, pool_labels)
            ok_terms = not terms or any(
                all(
                    match_expression(e, pool_labels)
                    for e in term.get("matchExpressions") or []
                    if not str(e.get("key", "")).startswith(WELL_KNOWN) or e.get("key") in pool_labels
                )
                for term in terms
            )
            picks = any(k in pool_labels for k in selector) or any(
                e.get("key") in pool_labels for term in terms for e in term.get("matchExpressions") or []
            )
            if not (ok_sel and ok_terms):
                r.drift(
                    self.code,
                    label,
                    svc,
                    f"{shown} of '{svc.id}' does not match pool '{pool.id}' labels "
                    f"{labels_text(pool.labels)}: the pods land on another pool or stay Pending",
                    field="pool",
                    where=where,
                )
            elif not picks:
                r.drift(
                    self.code,
                    label,
                    svc,
                    f"{shown} of '{svc.id}' uses none of pool '{pool.id}' labels "
                    f"({labels_text(pool.labels)}): the pods can land on any node",
                    field="pool",
                    where=where,
                )
            else:
                r.ok(self.code, label, svc, f"{shown} selects pool '{pool.id}'", field="pool", where=where)


class Tolerations(ServiceCheck):
    """The pods tolerate their pool's NoSchedule and NoExecute taints."""

    code = Code(
        "VK114",
        "tolerations",
        "Pods must tolerate their pool's taints, or they are never scheduled there.",
        "Kubernetes taints and tolerations",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, wl, where, pool = ctx.rec, t.label, t.svc, t.wl, t.where, t.pool
        if pool is None:
            return
        ps = pod_spec(wl)
        hard = [tn for tn in pool.taints if tn.effect in ("NoSchedule", "NoExecute")]
        if not hard:
            return
        tols = ps.get("tolerations") or []

        def tolerated(tn: Taint) -> bool:
            for tol in tols:
                op = tol.get("operator", "Equal")
                if tol.get("key") not in (None, "", tn.key):
                    continue
                if not tol.get("key") and op != "Exists":
                    continue
                if op == "Equal" and str(tol.get("value") or "") != str(tn.value or ""):
                    continue
                if tol.get("effect") not in (None, "", tn.effect):
                    continue
                return True
            return False

        lacks = [tn for tn in hard if not tolerated(tn)]
        if lacks:
            r.drift(
                self.code,
                label,
                svc,
                f"service '{svc.id}' does not tolerate the taint(s) "
                f"{', '.join(taint(tn) for tn in lacks)} of pool '{pool.id}': "
                "its pods are never scheduled there",
                field="pool",
                where=where,
            )
        else:
            r.ok(self.code, label, svc, f"tolerates pool '{pool.id}' taints", field="pool", where=where)


class PodsOnPool(ServiceCheck):
    """The running pods sit on nodes of their pool."""

    code = Code(
        "VK115",
        "pods on pool",
        "Running pods must sit on nodes of their pool.",
        "Kubernetes pod spec.nodeName",
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, wl, where, pool = ctx.rec, t.label, t.svc, t.wl, t.where, t.pool
        if pool is None:
            return
        if (
            ctx.state.usable("Node")
            and ctx.state.read("Pod").status in ("complete", "partial")
            and pool.labels
        ):
            sel = (wl.get("spec") or {}).get("selector")
            ns = meta(wl).get("namespace") or (svc.kubernetes.namespace if svc.kubernetes else "default")
            pods = [
                p
                for p in ctx.idx.in_ns("Pod", ns)
                if sel and selector_matches(sel, meta(p).get("labels") or {})
            ]
            placed = [(p, (p.get("spec") or {}).get("nodeName")) for p in pods]
            pool_names = {meta(n).get("name") for n in ctx.pool_nodes(pool)}
            wrong = sorted(
                f"{meta(p).get('name')} on {nn}" for p, nn in placed if nn and nn not in pool_names
            )
            if wrong:
                r.drift(
                    self.code,
                    label,
                    svc,
                    f"pods of '{svc.id}' run outside pool '{pool.id}': {', '.join(wrong[:5])}",
                    field="pool",
                    where=where,
                )
            elif placed and ctx.state.read("Pod").status == "partial":
                r.unknown(
                    self.code,
                    label,
                    svc,
                    f"the {len(placed)} pod(s) read are on pool '{pool.id}', "
                    f"but not every pod could be read: {ctx.state.read('Pod').message}",
                    field="pool",
                    where=where,
                )
            elif placed:
                r.ok(
                    self.code,
                    label,
                    svc,
                    f"{len(placed)} pod(s), all on pool '{pool.id}'",
                    field="pool",
                    where=where,
                )
