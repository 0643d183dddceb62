"""Deployment topology (mingrammer `diagrams`): node pools with hardware, networks, storage, services."""

from __future__ import annotations

import math
import subprocess
import threading
from typing import Any

from archkit.generators.diagram_text import num, one_line, wrap
from archkit.generators.registry import RenderContext, register
from archkit.spec.model import NodePool, Service, Topology

# `diagrams` keeps the current diagram/cluster in module-level context variables; one build
# at a time keeps two renders in one process from mixing nodes.
_LOCK = threading.Lock()
LARGE = 30  # services; beyond this the pools stack top to bottom
# `diagrams` draws icon nodes 1.4 in wide with the label below; Graphviz does not reserve room
# for a label wider than its node, so lines are kept to ~24 characters and nodes spaced wider.
WRAP = 24


def text(value: Any, width: int = 34, limit: int = 200) -> str:
    """A `diagrams` label line set: wrapped, backslashes doubled (DOT escapes), never `<...>` (HTML)."""
    lines = [line.replace("\\", "\\\\") for line in wrap(value, width, limit)]
    out = "\n".join(lines)
    if out.startswith("<"):
        out = "\u200b" + out  # the graphviz package would pass `<...>` through as an HTML label
    return out


def _amounts(a: Any) -> str:
    bits = []
    if a.cpu_cores is not None:
        bits.append(f"{num(a.cpu_cores)} CPU")
    if a.memory_mib is not None:
        bits.append(f"{num(a.memory_mib)} MiB")
    if a.gpu is not None:
        bits.append(f"{num(a.gpu)} GPU")
    return " · ".join(bits) or "–"


def pool_label(p: NodePool) -> str:
    lines = [f"pool {p.id} · {p.role}"]
    size = f"{p.count} node(s)" + (f" × {p.instance_type}" if p.instance_type else "")
    lines.append(size)
    hw = []
    if p.cpu_cores is not None:
        hw.append(f"{num(p.cpu_cores)} CPU")
    if p.memory_gib is not None:
        hw.append(f"{num(p.memory_gib)} GiB")
    if hw:
        lines.append(" · ".join(hw))
    if p.gpu is not None:
        g = p.gpu
        gpu = f"GPU {g.count} × {g.model}" + (f" {num(g.memory_gb)} GB" if g.memory_gb else "")
        lines.append(gpu)
        if g.mig_profile or g.sharing.value != "exclusive":
            lines.append(
                f"sharing {g.sharing.value}"
                + (f" · MIG {g.mig_profile}" if g.mig_profile else "")
                + (f" · {num(g.memory_fraction)} of memory" if g.memory_fraction else "")
            )
    for t in p.taints:
        lines.append(f"taint {t.key}" + (f"={t.value}" if t.value else "") + f":{t.effect}")
    if p.multi_tenant:
        lines.append("multi-tenant")
    return "\n".join(text(x, WRAP) for x in lines)


def service_label(s: Service) -> str:
    lines = [s.id, f"× {s.replicas}" + (f" ({s.min_replicas}–{s.max_replicas})" if s.max_replicas else "")]
    lines.append(f"req {_amounts(s.resources.requests)}")
    lines.append(f"lim {_amounts(s.resources.limits)}")
    if s.ports:
        lines.append("ports " + ", ".join(f"{p.port}/{p.purpose}" for p in s.ports))
    if s.image:
        lines.append(one_line(s.image.split("@")[0].rsplit("/", 1)[-1], 60))  # name:tag, not the registry
    for kind in ("liveness", "readiness", "startup"):
        probe = getattr(s.probes, kind, None) if s.probes is not None else None
        if probe is not None:
            lines.append(f"{kind}: {_probe(probe)}")
    if s.security is not None:
        sec = s.security
        bits = []
        if sec.run_as_non_root:
            bits.append("non-root")
        if sec.run_as_user is not None:
            bits.append(f"uid {sec.run_as_user}")
        if sec.read_only_root_fs:
            bits.append("ro rootfs")
        if sec.privileged:
            bits.append("PRIVILEGED")
        lines.append("security: " + (", ".join(bits) or "defaults"))
    else:
        lines.append("security: not declared")
    if s.ulimits:
        lines.append("ulimits: " + ", ".join(f"{k} {v}" for k, v in sorted(s.ulimits.items())))
    return "\n".join(text(x, WRAP) for x in lines)


def _probe(p: Any) -> str:
    if p.http_path is not None:
        what = f"GET {p.http_path}" + (f" :{p.port}" if p.port else "")
    elif p.tcp_port is not None:
        what = f"tcp :{p.tcp_port}"
    elif p.exec:
        what = "exec " + " ".join(p.exec)
    else:
        what = "declared"
    return f"{what} every {num(p.period_s)} s, timeout {num(p.timeout_s)} s"


def os_tuning_label(topo: Any, services: list[Service]) -> str | None:
    """The OS-tuning box of a pool: the topology's settings and its services' sysctls
    (rule AK310: somaxconn and the like belong here, where a reviewer looks)."""
    lines = []
    t = topo.os_tuning
    sysctls: dict[str, Any] = dict(t.sysctls) if t is not None else {}
    for s in services:
        sysctls.update(s.sysctls)
    for k, v in sorted(sysctls.items()):
        lines.append(f"{k} = {v}")
    if t is not None:
        if t.swappiness is not None:
            lines.append(f"vm.swappiness = {t.swappiness}")
        if t.resolver_options:  # seed 000 §5.7: the resolver's options belong on the diagram too
            lines.append("resolv.conf: " + " ".join(t.resolver_options))
        if t.ntp is not None:
            lines.append("NTP on" if t.ntp else "NTP off")
        if t.max_clock_drift_ms is not None:
            lines.append(f"clock drift <= {num(t.max_clock_drift_ms)} ms")
    if not lines:
        return None
    return "\n".join(["OS tuning"] + [text(x, 34) for x in lines])


def topology_source(ctx: RenderContext) -> str:
    """The DOT source `diagrams` builds; icon paths made relative to its `resources/` root."""
    return ctx.memo("topology.dot", lambda: _build_or_stand_in(ctx))


def _aspect(source: str) -> float:
    """Long side / short side of the laid-out graph (`dot -Tplain`'s first line: graph scale w h);
    infinity when dot cannot lay it out here."""
    from archkit.generators.renderers import RendererError, run_dot

    try:
        first = run_dot(source, "plain").split(b"\n", 1)[0].split()
        w, h = float(first[2]), float(first[3])
    except (RendererError, OSError, subprocess.SubprocessError, IndexError, ValueError):
        return math.inf
    return max(w, h) / max(min(w, h), 1e-9)


def _build_or_stand_in(ctx: RenderContext) -> str:
    from archkit.generators.renderers import RendererMissing, stand_in_dot

    try:
        if len(ctx.spec.topology.services) > LARGE:
            return _build(ctx, "TB")
        # pools side by side (TB) or stacked (LR): whichever lays out closer to square, so a
        # review page shows the diagram large enough to read (LR when dot is not here)
        # (a layout still taller than 2:1 gets more space between neighbours, which widens it)
        best: tuple[float, str] | None = None
        for direction, spread in (("LR", 1.0), ("TB", 1.0), ("TB", 2.0), ("TB", 3.0)):
            source = _build(ctx, direction, spread)
            aspect = _aspect(source)
            if aspect <= 2.0:
                return source
            if best is None or aspect < best[0]:
                best = (aspect, source)
        assert best is not None
        return best[1]
    except RendererMissing as exc:  # without `diagrams`, a box naming the fix (the render exits 1)
        return stand_in_dot(ctx.cache, "topology", str(exc), exc)


def _build(ctx: RenderContext, direction: str, spread: float = 1.0) -> str:
    from archkit.generators.renderers import RendererMissing

    try:
        import diagrams  # noqa: F401
    except ImportError as exc:
        raise RendererMissing(
            "the topology diagram needs the `diagrams` package: pip install 'archkit[render]'"
        ) from exc
    from diagrams import Diagram, setcluster, setdiagram

    from archkit.generators.renderers import icon_root

    class SourceOnly(Diagram):
        """A `diagrams.Diagram` that never renders or writes a file: we only want its DOT."""

        def __exit__(self, *exc: object) -> None:
            setdiagram(None)

    spec = ctx.spec
    topo = spec.topology
    title = spec.metadata.title or spec.metadata.name
    large = len(topo.services) > LARGE
    with _LOCK:
        setcluster(None)
        graph_attr = {
            "fontname": "DejaVu Sans",
            "fontsize": "14",
            "splines": "spline",
            "pad": "0.3",
            "nodesep": num(0.9 * spread),
            "ranksep": "1.2" if not large else "0.8",
            "labelloc": "t",
            "newrank": "true",
        }
        node_attr = {"fontname": "DejaVu Sans", "fontsize": "10"}
        edge_attr = {"fontname": "DejaVu Sans", "fontsize": "9", "color": "#4b5563"}
        with SourceOnly(
            text(f"{title} — deployment topology", 80),
            filename="topology",
            show=False,
            direction=direction,
            curvestyle="curved",
            outformat="dot",
            graph_attr=graph_attr,
            node_attr=node_attr,
            edge_attr=edge_attr,
        ) as diag:
            # nodes in a fixed order (the DOT is compared byte for byte): networks, pools with their
            # services, the pools' network links, storage, then mounts and ingress
            nets = _network_nodes(topo)
            pools, svc_nodes = _pool_and_service_nodes(topo)
            _pool_network_edges(topo, nets, pools)
            stores = _storage_nodes(topo)
            _service_edges(topo, svc_nodes, stores)
            src = diag.dot.source
    root = icon_root()
    if root is not None:
        src = src.replace(str(root) + "/", "")
    header = ctx.header("//")
    return header + "\n" + src if src.endswith("\n") else header + "\n" + src + "\n"


def _network_nodes(topo: Topology) -> dict[str, Any]:
    """One switch per network plane (kind, CIDR, MTU), in a cluster of their own."""
    from diagrams import Cluster
    from diagrams.generic.network import Switch

    nets: dict[str, Any] = {}
    if topo.networks:
        with Cluster("networks"):
            for i, n in enumerate(topo.networks):
                if n.id in nets:
                    continue
                lab = [f"{n.id} · {n.kind}", n.cidr, f"MTU {n.mtu}"] + (["public"] if n.public else [])
                nets[n.id] = Switch("\n".join(text(x, WRAP) for x in lab), nodeid=f"net{i}")
    return nets


def _pool_and_service_nodes(topo: Topology) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each node pool as a cluster holding its hardware, OS tuning and services; third-party
    services apart; services on a pool that does not exist flagged."""
    from diagrams import Cluster, Node
    from diagrams.generic.compute import Rack
    from diagrams.k8s.compute import Deploy
    from diagrams.onprem.network import Internet

    pools: dict[str, Any] = {}
    svc_nodes: dict[str, Any] = {}
    by_pool: dict[str, list[tuple[int, Service]]] = {}
    for i, s in enumerate(topo.services):
        by_pool.setdefault(s.pool, []).append((i, s))
    for i, p in enumerate(topo.node_pools):
        if p.id in pools:
            continue
        with Cluster(text(f"node pool {p.id}", 60), graph_attr={"fontsize": "12"}):
            pools[p.id] = Rack(pool_label(p), nodeid=f"pool{i}")
            inside = [(j, s) for j, s in by_pool.get(p.id, []) if not s.external]
            tuning = os_tuning_label(topo, [s for _, s in inside])
            if tuning is not None:
                Node(
                    tuning,
                    nodeid=f"os{i}",
                    # a plain box, not an icon node (diagrams' defaults: fixed 1.4 in, label below)
                    shape="note",
                    style="filled",
                    fillcolor="#f9fafb",
                    fixedsize="false",
                    labelloc="c",
                    width="0",
                    height="0",
                    margin="0.1,0.05",
                    fontsize="10",
                )
            for j, s in inside:
                if s.id not in svc_nodes:
                    svc_nodes[s.id] = Deploy(service_label(s), nodeid=f"svc{j}")
    external = [(j, s) for j, s in enumerate(topo.services) if s.external and s.id not in svc_nodes]
    if external:  # third parties are not ours to deploy: outside every pool
        with Cluster("external dependencies", graph_attr={"style": "dashed", "fontsize": "12"}):
            for j, s in external:
                svc_nodes[s.id] = Internet(service_label(s), nodeid=f"svc{j}")
    orphans = [(j, s) for pid, items in by_pool.items() if pid not in pools for j, s in items]
    if orphans:
        with Cluster("services on undefined pools / external"):
            for j, s in orphans:
                if s.id not in svc_nodes:
                    svc_nodes[s.id] = Deploy(
                        service_label(s) + "\n" + text(f"pool {s.pool} ?"), nodeid=f"svc{j}"
                    )
    return pools, svc_nodes


def _pool_network_edges(topo: Topology, nets: dict[str, Any], pools: dict[str, Any]) -> None:
    """A dashed link from each pool to each network plane it is on."""
    from diagrams import Edge

    for p in topo.node_pools:
        for net in p.networks:
            if net in nets and pools.get(p.id) is not None:
                nets[net] - Edge(color="#9ca3af", style="dashed") - pools[p.id]


def _storage_nodes(topo: Topology) -> dict[str, Any]:
    """One node per storage: type, source, mount options, size, encryption, data classes."""
    from diagrams import Cluster
    from diagrams.generic.storage import Storage

    stores: dict[str, Any] = {}
    if topo.storage:
        with Cluster("storage"):
            for i, st in enumerate(topo.storage):
                if st.id in stores:
                    continue
                lab = [f"{st.id} · {st.type}"]
                if st.source:
                    lab.append(st.source)
                if st.mount_options:
                    lab.append("opts " + ",".join(st.mount_options))
                if st.size_gib:
                    lab.append(f"{num(st.size_gib)} GiB")
                if st.encrypted:
                    lab.append("encrypted")
                if st.data_classes:
                    lab.append("data " + ", ".join(st.data_classes))
                stores[st.id] = Storage("\n".join(text(x, WRAP) for x in lab), nodeid=f"sto{i}")
    return stores


def _service_edges(topo: Topology, svc_nodes: dict[str, Any], stores: dict[str, Any]) -> None:
    """Each service's mounts (to their storage) and ingress rules (from their sources)."""
    from diagrams import Edge
    from diagrams.generic.network import Subnet
    from diagrams.onprem.network import Internet

    sources: dict[str, Any] = {}

    def source(ref: str) -> Any:
        if ref.startswith("service:") and ref[8:] in svc_nodes:
            return svc_nodes[ref[8:]]
        if ref not in sources:
            k = len(sources)
            if ref == "public":
                sources[ref] = Internet("public", nodeid=f"src{k}")
            else:
                sources[ref] = Subnet(text(ref, 30), nodeid=f"src{k}")
        return sources[ref]

    for s in topo.services:
        node = svc_nodes.get(s.id)
        if node is None:
            continue
        for m in s.mounts:
            if m.storage in stores:
                (
                    node
                    >> Edge(
                        fontsize="9",
                        fontname="DejaVu Sans",
                        # a head label sits at the mount's end of the edge, not mid-way
                        headlabel=text(m.path + (" (ro)" if m.read_only else ""), 30),
                        labeldistance="2.5",
                        color="#b45309",
                        style="dotted",
                    )
                    >> stores[m.storage]
                )
        for r in s.ingress:
            rule = ",".join(str(p) for p in r.ports) or "all ports"
            if r.auth != "none":
                rule += f" · {r.auth}"
            (
                source(r.from_)
                >> Edge(fontsize="9", fontname="DejaVu Sans", label=text(rule, 30), color="#1d4ed8")
                >> node
            )
        if s.public and not s.ingress:
            (
                source("public")
                >> Edge(fontsize="9", fontname="DejaVu Sans", label="public", color="#1d4ed8")
                >> node
            )


@register(
    "topology",
    order=30,
    source="seed 000 §3.3 (node pools, network planes with CIDRs, storage bindings), §5.9 (the OS-tuning box); seed 004 §2.3",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Deployment topology (`diagrams`): pools with GPUs/MIG, networks (CIDR, MTU), storage, services."""
    return {"topology.dot": topology_source(ctx)}
