"""A service's NetworkPolicies: declared ingress enforced (VK170) and nothing more admitted (VK171),
declared egress enforced (VK172)."""

from __future__ import annotations

from typing import Any

from archkit.spec.model import IngressRule
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import (
    WORLD,
    cidr,
    cidr_within,
    meta,
    peer_text,
    pod_labels,
    resolve_port,
    selector_matches,
)
from archkit.verify.registry import Code


class NetworkPolicies(ServiceCheck):
    """NetworkPolicies selecting the pods admit exactly the declared ingress and egress."""

    code = Code(
        "VK170",
        "NetworkPolicy ingress",
        "Declared ingress rules must be enforced by a NetworkPolicy.",
        "seed 000 §5.11",
    )
    ingress_nothing_more = Code(
        "VK171",
        "ingress: nothing more",
        "A NetworkPolicy must not admit sources the spec does not declare.",
        "seed 000 §5.11",
    )
    egress = Code(
        "VK172",
        "NetworkPolicy egress",
        "Declared egress rules must be enforced by a NetworkPolicy (the feature DB may not reach out).",
        "seed 000 §2.4",
    )
    also = (
        ingress_nothing_more,
        egress,
    )

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        svc, wl, c, ns, where = t.svc, t.wl, t.c, t.ns, t.where
        if not svc.ingress and not svc.egress:
            return
        r, label = ctx.rec, t.label
        why = ctx.why_not("NetworkPolicy")
        if why:
            r.unknown(
                self.code,
                label,
                svc,
                f"cannot check network policies of '{svc.id}': {why}",
                field="ingress" if svc.ingress else "egress",
                where=where,
            )
            return
        labels = pod_labels(wl)
        for direction, rules, code, key in (
            ("Ingress", svc.ingress, self.code, "ingress"),
            ("Egress", svc.egress, self.egress, "egress"),
        ):
            if not rules:
                continue
            pols = _policies(ctx, labels, ns, direction)
            field_name = "from" if direction == "Ingress" else "to"
            if not pols:
                allowed = ", ".join(
                    f"{getattr(rule, 'from_', None) or getattr(rule, 'to', '')}"
                    f"{' on ' + ','.join(map(str, rule.ports)) if rule.ports else ''}"
                    for rule in rules
                )
                r.drift(
                    code,
                    label,
                    svc,
                    f"no NetworkPolicy restricts {direction.lower()} of '{svc.id}': every pod can "
                    f"{'connect to it' if direction == 'Ingress' else 'be reached from it'}; the spec allows only "
                    f"{allowed} (seed 000 §5.11)",
                    field=key,
                    where=where,
                )
                continue
            pol_rules = [(p, pr) for p in pols for pr in (p.get("spec") or {}).get(key) or []]
            bad = []
            for rule in rules:
                declared = rule.from_ if isinstance(rule, IngressRule) else rule.to
                port_c = c if direction == "Ingress" else None
                if (
                    cidr(declared) is None
                    and declared.strip() not in WORLD
                    and not declared.startswith(("service:", "namespace:"))
                ):
                    r.unknown(
                        code,
                        label,
                        rule,
                        f"a NetworkPolicy cannot name the host '{declared}'; check the egress gateway "
                        "or an FQDN policy of your CNI",
                        field=field_name,
                        where=where,
                    )
                    continue
                covered: bool | None = False
                for _pol, pr in pol_rules:
                    if not _ports_cover(pr, rule.ports, port_c):
                        continue
                    peers = pr.get(field_name)
                    if not peers:
                        covered = True
                        break
                    verdicts = [_peer_covers(ctx, peer, declared, ns) for peer in peers]
                    if any(v is True for v in verdicts):
                        covered = True
                        break
                    if any(v is None for v in verdicts):
                        covered = None
                if covered is None:
                    r.unknown(
                        code,
                        label,
                        rule,
                        f"cannot tell whether the NetworkPolicies of '{svc.id}' allow {declared}: "
                        "the peer service's workload was not found",
                        field=field_name,
                        where=where,
                    )
                elif not covered:
                    bad.append(rule)
                    r.drift(
                        code,
                        label,
                        rule,
                        f"NetworkPolicy {', '.join(meta(p).get('name', '?') for p in pols)} does not allow "
                        f"{direction.lower()} {'from' if direction == 'Ingress' else 'to'} {declared}"
                        f"{' on ' + ','.join(map(str, rule.ports)) if rule.ports else ''} for '{svc.id}', "
                        "which the spec declares: that traffic is dropped",
                        field=field_name,
                        where=where,
                    )
            if not bad:
                r.ok(
                    code,
                    label,
                    svc,
                    f"{direction.lower()} allowed by {', '.join(meta(p).get('name', '?') for p in pols)}",
                    field=key,
                    where=where,
                )
            if direction == "Ingress":
                _extra_ingress(ctx, t, svc.ingress, pol_rules)


def _policies(ctx: KubeContext, labels: dict, ns: str, direction: str) -> list[dict]:
    out = []
    for pol in ctx.idx.in_ns("NetworkPolicy", ns):
        ps = pol.get("spec") or {}
        if not selector_matches(ps.get("podSelector") or {}, labels):
            continue
        types = ps.get("policyTypes") or (["Ingress"] + (["Egress"] if ps.get("egress") else []))
        if direction in types:
            out.append(pol)
    return out


def _peer_covers(ctx: KubeContext, peer: dict, declared: str, my_ns: str) -> bool | None:
    """Does one NetworkPolicy peer admit the declared source/destination? None: cannot tell."""
    if declared.strip() in WORLD:
        block = peer.get("ipBlock") or {}
        return block.get("cidr") in ("0.0.0.0/0", "::/0")
    if declared.startswith("namespace:"):
        # a whole namespace, e.g. 'namespace:monitoring' for Prometheus or the ingress controller
        nss = peer.get("namespaceSelector")
        return (
            nss is not None
            and "ipBlock" not in peer
            and selector_matches(nss, {"kubernetes.io/metadata.name": declared.split(":", 1)[1]})
        )
    if declared.startswith("service:"):
        other = ctx.spec.service(declared.split(":", 1)[1])
        if other is None:
            return None
        wl = ctx.workload(other)
        if wl is None:
            return None
        if "ipBlock" in peer or "podSelector" not in peer:
            return False
        other_ns = meta(wl).get("namespace") or (
            other.kubernetes.namespace if other.kubernetes else "default"
        )
        if "namespaceSelector" in peer:
            nsl = {"kubernetes.io/metadata.name": other_ns}
            if not selector_matches(peer["namespaceSelector"], nsl):
                return False
        elif other_ns != my_ns and meta(wl).get("namespace") is not None:
            return False
        return selector_matches(peer.get("podSelector") or {}, pod_labels(wl))
    if cidr(declared) is not None:
        block = peer.get("ipBlock") or {}
        return bool(block) and cidr_within(declared, block.get("cidr", ""))
    return None  # a host name: NetworkPolicies cannot name hosts


def _ports_cover(rule: dict, ports: list[int], c: dict | None) -> bool:
    rports = rule.get("ports")
    if not rports:
        return True
    if any(p.get("port") is None for p in rports):
        return True
    have: set[Any] = set()
    for p in rports:
        first = resolve_port(p.get("port"), c)
        last = p.get("endPort")
        if isinstance(first, int) and isinstance(last, int) and last >= first:
            have.update(range(first, last + 1))
        else:
            have.add(first)
    return all(p in have for p in ports)


def _extra_ingress(
    ctx: KubeContext, t: ServiceTarget, rules: list[IngressRule], pol_rules: list[tuple[dict, dict]]
) -> None:
    r, label, svc, ns, where = ctx.rec, t.label, t.svc, t.ns, t.where
    declared = [rule.from_ for rule in rules]
    extras = []
    for pol, pr in pol_rules:
        peers = pr.get("from")
        if not peers:
            if not any(d.strip() in WORLD for d in declared):
                extras.append(f"{meta(pol).get('name')} admits every source")
            continue
        for peer in peers:
            if not any(_peer_covers(ctx, peer, d, ns) for d in declared):
                extras.append(f"{meta(pol).get('name')} admits {peer_text(peer)}")
    if extras:
        r.drift(
            NetworkPolicies.ingress_nothing_more,
            label,
            svc,
            f"'{svc.id}' admits more than the spec declares ({', '.join(declared)}): "
            f"{'; '.join(sorted(set(extras)))}",
            field="ingress",
            where=where,
        )
    else:
        r.ok(
            NetworkPolicies.ingress_nothing_more,
            label,
            svc,
            "no source beyond the declared ones",
            field="ingress",
            where=where,
        )
