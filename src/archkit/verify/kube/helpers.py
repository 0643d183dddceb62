"""Helpers of the Kubernetes checks: quantities, label selectors, ports, CIDRs, object fields."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from archkit.spec.model import Taint

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
WORLD = {"0.0.0.0/0", "::/0", "public", "*"}  # as the AK504/AK505 checks read 'from'

GPU = "nvidia.com/gpu"
# Well-known node labels every node carries; a nodeSelector on them does not pick a pool, and
# a spec need not list them among the pool's labels.
WELL_KNOWN = ("kubernetes.io/", "node.kubernetes.io/", "beta.kubernetes.io/", "topology.kubernetes.io/")

_MEM_UNITS = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "m": 1e-3,
}
_QTY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


def quantity(value: Any) -> float | None:
    """A Kubernetes quantity ('500m', '8Gi', 2) as a plain number (cores, bytes, count)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _QTY.match(str(value).strip())
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2)
    if not unit:
        return number
    if unit not in _MEM_UNITS:
        return None
    return number * _MEM_UNITS[unit]


def num(x: float) -> str:
    return f"{x:g}"


def labels_text(labels: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none)"


def taint(t: Taint) -> str:
    return f"{t.key}={t.value or ''}:{t.effect}"


def meta(obj: Any) -> dict:
    found = obj.get("metadata") if isinstance(obj, dict) else None
    return found if isinstance(found, dict) else {}


def as_key(value: Any) -> str | None:
    """A name or namespace as an index key (damaged objects may hold anything there)."""
    return value if value is None or isinstance(value, str) else str(value)


def match_expression(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return key in labels and str(labels[key]) in [str(v) for v in values]
    if op == "NotIn":
        return key not in labels or str(labels[key]) not in [str(v) for v in values]
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError, IndexError):
            return False
        return have > want if op == "Gt" else have < want
    return False


def selector_matches(selector: dict | None, labels: dict) -> bool:
    """A LabelSelector (matchLabels + matchExpressions) against labels; an empty one matches all."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if str(labels.get(k)) != str(v):
            return False
    return all(match_expression(e, labels) for e in selector.get("matchExpressions") or [])


def dict_matches(selector: dict | None, labels: dict) -> bool:
    return all(str(labels.get(k)) == str(v) for k, v in (selector or {}).items())


def template(workload: dict) -> dict:
    return (workload.get("spec") or {}).get("template") or {}


def pod_spec(workload: dict) -> dict:
    return template(workload).get("spec") or {}


def pod_labels(workload: dict) -> dict:
    return (template(workload).get("metadata") or {}).get("labels") or {}


def ports_of(container: dict) -> list[dict]:
    return container.get("ports") or []


def resolve_port(port: Any, container: dict | None) -> Any:
    """A named port ('http') as its number, through the container's port list."""
    if isinstance(port, str) and not port.isdigit() and container is not None:
        for p in ports_of(container):
            if p.get("name") == port:
                return p.get("containerPort")
    if isinstance(port, str) and port.isdigit():
        return int(port)
    return port


def peer_text(peer: dict) -> str:
    """A NetworkPolicy peer in words: '10.0.0.0/8', 'pods app=x', 'namespace monitoring'."""
    if peer.get("ipBlock"):
        return str((peer["ipBlock"] or {}).get("cidr"))
    parts = []
    nss = peer.get("namespaceSelector")
    if nss is not None:
        names = (nss.get("matchLabels") or {}) if isinstance(nss, dict) else {}
        parts.append(
            f"namespace {names['kubernetes.io/metadata.name']}"
            if "kubernetes.io/metadata.name" in names
            else f"namespaces {labels_text(names) if names else '(all)'}"
        )
    pods = peer.get("podSelector")
    if pods is not None:
        labels = (pods.get("matchLabels") or {}) if isinstance(pods, dict) else {}
        parts.append(f"pods {labels_text(labels)}" if labels else "all pods")
    return " / ".join(parts) or "?"


def cidr(text: str) -> Any | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def cidr_within(inner: str, outer: str) -> bool:
    a, b = cidr(inner), cidr(outer)
    return a is not None and b is not None and a.version == b.version and a.subnet_of(b)
