"""Verify findings (pass, drift, unknown) with their spec location, and their text, JSON and JUnit forms."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from archkit.spec import Spec, file_of, source_of
from archkit.spec.loader import format_path


class Status(str, Enum):
    """The outcome of one verify check."""

    PASS = "pass"
    DRIFT = "drift"  # the system differs from the spec
    UNKNOWN = "unknown"  # could not be checked (forbidden, unreachable, not in this source)


# code -> (short title, why it matters; the seed section it comes from). Drift codes have
# their own prefixes: VK1xx Kubernetes, VT2xx Triton, VP3xx Prometheus.
CODES: dict[str, tuple[str, str]] = {
    "VK101": (
        "pool node count",
        "A pool with fewer nodes than declared cannot hold the replicas placed on it "
        "(seed 000 §3.3: pools are per role, e.g. gpu-node-t4 for inference).",
    ),
    "VK102": (
        "pool GPU allocatable",
        "Nodes must advertise the declared nvidia.com/gpu (or MIG) count, or GPU "
        "pods stay Pending (seed 004 §2.3).",
    ),
    "VK103": ("pool taints", "GPU nodes are tainted so that only GPU workloads land there (seed 000 §3.3)."),
    "VK110": ("workload exists", "Every service of the topology must be deployed as its declared workload."),
    "VK111": ("replicas", "The declared replica count is the capacity the budgets were computed for."),
    "VK112": ("ready replicas", "Replicas that are not ready serve no traffic."),
    "VK113": (
        "placement on pool",
        "A nodeSelector or required node affinity must pin the pods to the labels of "
        "their pool (seed 004 §2.3: hardware-type labels).",
    ),
    "VK114": ("tolerations", "Pods must tolerate their pool's taints, or they are never scheduled there."),
    "VK115": ("pods on pool", "Running pods must sit on nodes of their pool."),
    "VK116": ("image", "The deployed image must be the declared one (seed 000 §4.1: pin exact versions)."),
    "VK120": (
        "requests and limits",
        "CPU, memory and GPU requests/limits as declared are what the capacity analysis assumed.",
    ),
    "VK121": (
        "GPU requests = limits",
        "Kubernetes refuses a pod whose nvidia.com/gpu request differs from its limit (seed 004 §2.3).",
    ),
    "VK130": (
        "liveness probe",
        "A liveness probe restarts a pod stuck, e.g. on a hung NFS mount (seed 000 §3.3).",
    ),
    "VK131": (
        "readiness probe",
        "Without a readiness probe, traffic reaches pods whose models are not loaded.",
    ),
    "VK132": ("startup probe", "A startup probe protects slow model loads from the liveness probe."),
    "VK140": ("runAsNonRoot", "Containers run as a non-root user (seed 000 §4.1)."),
    "VK141": ("runAsUser", "The declared UID (seed 000 §4.1, §5.6: runAsUser 1001)."),
    "VK142": ("privileged", "Privileged containers can take over the node."),
    "VK143": ("read-only root filesystem", "As declared in the spec's security section."),
    "VK144": (
        "sysctls",
        "Kernel parameters the service needs (seed 000 §5.9), set in the pod securityContext.",
    ),
    "VK150": (
        "volume mount",
        "Each declared mount must be mounted at its path with its type and read-only flag (seed 000 §3.3).",
    ),
    "VK151": (
        "mount options",
        "NFS must be mounted soft with timeo/retrans, or a stuck server hangs the "
        "process in stat() forever (seed 000 §3.3).",
    ),
    "VK160": ("container ports", "Each declared port is exposed by the container."),
    "VK161": ("Service ports", "A Kubernetes Service selects the pods and serves each declared port."),
    "VK162": (
        "Service exposure",
        "A service not declared public must not be a NodePort or LoadBalancer "
        "(seed 000 §5.11: a Triton NodePort on the internet was hijacked for mining).",
    ),
    "VK170": (
        "NetworkPolicy ingress",
        "Declared ingress rules must be enforced by a NetworkPolicy (seed 000 §5.11).",
    ),
    "VK171": (
        "ingress: nothing more",
        "A NetworkPolicy must not admit sources the spec does not declare (seed 000 §5.11).",
    ),
    "VK172": (
        "NetworkPolicy egress",
        "Declared egress rules must be enforced by a NetworkPolicy "
        "(seed 000 §2.4: the feature DB may not reach out).",
    ),
    "VT200": ("Triton reachable", "The Triton endpoint given with --triton-url must answer."),
    "VT201": ("server live", "Triton's /v2/health/live."),
    "VT202": ("server ready", "Triton's /v2/health/ready (seed 000 §3.4: 503 means a model failed to load)."),
    "VT210": (
        "model present",
        "Each model stage the spec declares with server: triton is in the repository.",
    ),
    "VT211": ("model ready", "The model is READY at its declared version(s) (seed 000 §5.12)."),
    "VT220": ("max_batch_size", "The batch size the latency budget was computed for (seed 000 §2.1)."),
    "VT221": (
        "max_queue_delay",
        "dynamic_batching max_queue_delay_microseconds bounds the wait to fill a batch (seed 000 §2.1–2.2).",
    ),
    "VT222": ("preferred batch sizes", "dynamic_batching preferred_batch_size as declared."),
    "VT223": ("instance count", "The model instances (instance_group count) as declared."),
    "VT224": ("max queue size", "A bounded queue refuses work beyond it instead of timing out."),
    "VT225": ("version policy", "Which versions stay loaded (seed 000 §2.2: latest 2)."),
    "VT226": (
        "dynamic batching on",
        "The spec declares batching; Triton must have dynamic_batching enabled.",
    ),
    "VT227": (
        "instance kind",
        "A model declared device: cpu must not run on KIND_GPU instances (seed 000 §5.8: "
        "CPU models on KIND_CPU take no CUDA context); a GPU model on CPU is noted, not drift.",
    ),
    "VT228": (
        "queue timeout",
        "dynamic_batching default_queue_policy default_timeout_microseconds: how long a "
        "request may wait in the queue before it is refused.",
    ),
    "VP300": ("Prometheus reachable", "The Prometheus endpoint given with --prometheus-url must answer."),
    "VP301": ("rule groups loaded", "The alert and recording rules generated from the spec are loaded."),
    "VP302": ("rules evaluate", "A rule with an evaluation error never fires."),
    "VP310": ("scrape target present", "Each scrape target the spec declares is configured."),
    "VP311": ("scrape target up", "Each scrape target the spec declares is up (seed 000 §4.3)."),
}
AREAS = ("kube", "triton", "prometheus")


@dataclass
class Finding:
    """The outcome of one check on one object, and where in the spec the expectation comes from."""

    area: str
    object: str
    code: str
    status: Status
    message: str
    file: str = "<spec>"
    line: int = 1
    col: int = 1
    path: str = ""
    where: str = ""  # the cluster or server object it was checked against

    @property
    def title(self) -> str:
        return CODES.get(self.code, (self.code, ""))[0]

    def as_dict(self) -> dict:
        return {
            "area": self.area,
            "object": self.object,
            "code": self.code,
            "check": self.title,
            "status": self.status.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "path": self.path,
            "where": self.where,
        }


class Recorder:
    """Collects findings for one area, locating each at the spec object (and field) it checks."""

    def __init__(self, spec: Spec, area: str):
        self.spec, self.area = spec, area
        self.smap = source_of(spec)
        self.file = file_of(spec)
        self.findings: list[Finding] = []

    def add(
        self,
        status: Status,
        code: str,
        obj_label: str,
        node: Any,
        fld: str | None,
        message: str,
        where: str = "",
    ) -> Finding:
        path = tuple(getattr(node, "spec_path", ()) or ())
        if fld:
            path = path + tuple(fld.split("."))
        loc = self.smap.at(path)
        f = Finding(
            self.area,
            obj_label,
            code,
            status,
            message,
            self.file,
            loc.line,
            loc.col,
            format_path(path),
            where,
        )
        self.findings.append(f)
        return f

    def ok(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.PASS, code, obj_label, node, fld, message, where)

    def drift(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.DRIFT, code, obj_label, node, fld, message, where)

    def unknown(self, code, obj_label, node, fld, message, where=""):
        return self.add(Status.UNKNOWN, code, obj_label, node, fld, message, where)


@dataclass
class VerifyReport:
    """All findings of one `archkit verify` run, and what was read to reach them."""

    spec_file: str
    findings: list[Finding] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)
    api_calls: int = 0

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for f in self.findings:
            row = out.setdefault(f.area, {s.value: 0 for s in Status})
            row[f.status.value] += 1
        return out

    def total(self, status: Status) -> int:
        return sum(1 for f in self.findings if f.status is status)

    def failed(self, fail_on: str = "drift") -> bool:
        """Whether the run fails: on drift, on drift or unknown, or never."""
        if fail_on == "never":
            return False
        if fail_on == "unknown":
            return self.total(Status.DRIFT) + self.total(Status.UNKNOWN) > 0
        return self.total(Status.DRIFT) > 0

    def summary(self) -> str:
        parts = []
        counts = self.counts()
        for area in AREAS:
            if area in counts:
                c = counts[area]
                parts.append(f"{area}: {c['pass']} pass, {c['drift']} drift, {c['unknown']} unknown")
        total = (
            f"{self.total(Status.PASS)} pass, {self.total(Status.DRIFT)} drift, "
            f"{self.total(Status.UNKNOWN)} unknown"
        )
        return "; ".join(parts + [f"total: {total}"]) if parts else "nothing was checked"


def _grouped(findings: Iterable[Finding]) -> list[tuple[tuple[str, str], list[Finding]]]:
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.area, f.object), []).append(f)
    order = {a: i for i, a in enumerate(AREAS)}
    return sorted(groups.items(), key=lambda kv: order.get(kv[0][0], 99))  # stable within an area


def to_text(report: VerifyReport, colour: bool = False, show_pass: bool = True) -> str:
    """A table grouped by area and object: status, code, check, spec line, message."""
    paint = {Status.PASS: "\033[32m", Status.DRIFT: "\033[31m", Status.UNKNOWN: "\033[33m"}
    lines = [f"archkit verify {report.spec_file}"]
    for src in report.sources:
        lines.append(f"  {src['area']}: {src['source']}")
        for kind, r in (src.get("kinds") or {}).items():
            if r["status"] != "complete" or r.get("message"):
                lines.append(f"    {kind}: {r['status']}{' — ' + r['message'] if r.get('message') else ''}")
    for (area, obj), items in _grouped(report.findings):
        shown = [f for f in items if show_pass or f.status is not Status.PASS]
        if not shown:
            continue
        where = next((f.where for f in items if f.where), "")
        lines.append("")
        lines.append(f"{area} · {obj}" + (f"  ({where})" if where else ""))
        for f in shown:
            status = f.status.value
            pad = " " * (7 - len(status))
            if colour:
                status = f"{paint[f.status]}{status}\033[0m"
            lines.append(f"  {status}{pad}  {f.code}  {f.title:<26} {f.file}:{f.line}  {f.message}")
    lines.append("")
    lines.append(report.summary())
    return "\n".join(lines) + "\n"


def to_json(report: VerifyReport) -> str:
    data = {
        "spec": report.spec_file,
        "summary": report.counts(),
        "totals": {s.value: report.total(s) for s in Status},
        "sources": report.sources,
        "api_calls": report.api_calls,
        "findings": [f.as_dict() for f in report.findings],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def to_junit(report: VerifyReport) -> str:
    """JUnit XML: a testsuite per area, a testcase per finding; drift = failure, unknown = skipped."""
    counts = report.counts()
    root = ET.Element(
        "testsuites",
        {
            "name": f"archkit verify {report.spec_file}",
            "tests": str(len(report.findings)),
            "failures": str(report.total(Status.DRIFT)),
            "skipped": str(report.total(Status.UNKNOWN)),
            "errors": "0",
        },
    )
    for area in AREAS:
        items = [f for f in report.findings if f.area == area]
        if not items:
            continue
        c = counts[area]
        suite = ET.SubElement(
            root,
            "testsuite",
            {
                "name": area,
                "tests": str(len(items)),
                "failures": str(c["drift"]),
                "skipped": str(c["unknown"]),
                "errors": "0",
            },
        )
        for f in items:
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": f"{area}.{f.object}",
                    "name": f"{f.code} {f.title}",
                    "file": f.file,
                    "line": str(f.line),
                },
            )
            detail = f"{f.file}:{f.line}:{f.col}: {f.code} {f.message}" + (f" [{f.where}]" if f.where else "")
            if f.status is Status.DRIFT:
                el = ET.SubElement(case, "failure", {"type": "drift", "message": f.message})
                el.text = detail
            elif f.status is Status.UNKNOWN:
                ET.SubElement(case, "skipped", {"message": f.message})
            else:
                out = ET.SubElement(case, "system-out")
                out.text = f.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
