"""AK314: a Kubernetes name, namespace, container or label that Kubernetes would refuse."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

# Kubernetes "Object Names and IDs" (kubernetes.io/docs/concepts/overview/working-with-objects/names):
# a DNS-1123 label is at most 63 lowercase letters, digits and '-', starting and ending with an
# alphanumeric; a DNS-1123 subdomain is at most 253 characters of labels joined by '.'.
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Labels (kubernetes.io/docs/concepts/overview/working-with-objects/labels): a key is an optional
# DNS subdomain prefix and '/', then a name of at most 63 alphanumerics, '-', '_', '.' that starts
# and ends alphanumeric; a value is empty or the same as such a name.
LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def dns1123_label(s: str) -> bool:
    return DNS1123_LABEL.fullmatch(s) is not None


def dns1123_subdomain(s: str) -> bool:
    return len(s) <= 253 and DNS1123_SUBDOMAIN.fullmatch(s) is not None


def label_key(s: str) -> bool:
    prefix, _, name = s.rpartition("/")
    return (not prefix or dns1123_subdomain(prefix)) and LABEL_NAME.fullmatch(name) is not None


def label_value(s: str) -> bool:
    return s == "" or LABEL_NAME.fullmatch(s) is not None


@register
class KubernetesNameInvalid(Rule):
    """A `kubernetes:` name, namespace, container or label is not one Kubernetes accepts."""

    code = "AK314"
    name = "kubernetes-name-invalid"
    source = (
        "seed 000 §3.4 and §6 (the on-call engineer runs the runbook's kubectl commands as written); "
        "Kubernetes: Object Names and IDs (RFC 1123 label and subdomain names), Labels and Selectors"
    )
    rationale = """
The `kubernetes:` block names the workload that `archkit verify` reads and that the generated
runbooks act on (`kubectl rollout status/undo <kind>/<name> -n <namespace>`). Kubernetes only
accepts RFC 1123 names there: lowercase letters, digits and '-' (and '.' in a Deployment's or
DaemonSet's name), starting and ending with a letter or digit, at most 63 characters (253 for
a subdomain). A name outside that never matches a real object, and text such as `$(...)` or
`; ...` in it has no business in an on-call engineer's copy-paste command (the runbooks quote
every value anyway). Without `name`, the service id is the name and must follow the same rule.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            kube = svc.kubernetes
            if kube is None:
                continue
            # a StatefulSet's name becomes its pods' host names: a DNS label, not a subdomain
            label_only = kube.kind == "StatefulSet"
            ok, what = (
                (dns1123_label, "a DNS-1123 label")
                if label_only
                else (dns1123_subdomain, "a DNS-1123 subdomain")
            )
            name = kube.name if kube.name is not None else svc.id
            if not ok(name):
                obj, field = (kube, "name") if kube.name is not None else (svc, "id")
                yield ctx.at(
                    obj,
                    field,
                    f"service '{svc.id}': {kube.kind} name {name!r} is not {what}",
                    hint="lowercase letters, digits and '-', starting and ending with a letter or digit",
                )
            if not dns1123_label(kube.namespace):
                yield ctx.at(
                    kube,
                    "namespace",
                    f"service '{svc.id}': namespace {kube.namespace!r} is not a DNS-1123 label",
                )
            if kube.container is not None and not dns1123_label(kube.container):
                yield ctx.at(
                    kube,
                    "container",
                    f"service '{svc.id}': container {kube.container!r} is not a DNS-1123 label",
                )
            for k, v in sorted(kube.labels.items()):
                if not label_key(k):
                    yield ctx.at(
                        kube, "labels", f"service '{svc.id}': label key {k!r} is not a Kubernetes label key"
                    )
                elif not label_value(v):
                    yield ctx.at(
                        kube, "labels", f"service '{svc.id}': label {k}={v!r} is not a Kubernetes label value"
                    )
