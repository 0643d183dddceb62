"""Builds cluster state fixtures: a `kubectl get -o yaml` snapshot from rendered manifests plus nodes and pods.

`snapshot.yaml` in each fixture folder is this module's output, committed so that it can be
read like a real snapshot; `test_snapshot_fixture_is_current` keeps the two in step. The
benchmark uses the same builder with hundreds of filler nodes and thousands of filler pods.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from archkit.spec import load_file
from archkit.verify.state import load_manifests

HERE = Path(__file__).resolve().parent / "fixtures"
INDUSTRIAL = HERE / "industrial-inspection"
INDUSTRIAL_SPEC = Path(__file__).resolve().parents[2] / "examples" / "industrial-inspection.yaml"


def _node(name: str, labels: dict, taints: list, gpus: int | None, cpu: float, mem_gib: float) -> dict:
    alloc = {"cpu": f"{cpu:g}", "memory": f"{int(mem_gib)}Gi", "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels},
        },
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if taints:
        node["spec"]["taints"] = taints
    return node


def cluster_objects(
    spec_path: Path = INDUSTRIAL_SPEC,
    manifests: Path = INDUSTRIAL / "manifests",
    filler_nodes: int = 0,
    filler_pods: int = 0,
) -> list[dict]:
    """Nodes for every pool, the manifests' objects with status, and their running pods."""
    spec = load_file(spec_path).spec
    assert spec is not None
    objs: list[dict] = []
    pool_nodes: dict[str, list[str]] = {}
    for pool in spec.topology.node_pools:
        names = [f"{pool.id}-{i + 1}" for i in range(pool.count)]
        pool_nodes[pool.id] = names
        taints = [
            {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in pool.taints
        ]
        for n in names:
            objs.append(
                _node(
                    n,
                    dict(pool.labels),
                    taints,
                    pool.gpu.count if pool.gpu else None,
                    pool.cpu_cores or 8,
                    pool.memory_gib or 32,
                )
            )
    for i in range(filler_nodes):
        objs.append(_node(f"general-{i:04d}", {"hardware-type": "general"}, [], None, 16, 64))
    state = load_manifests(manifests)
    for kind in (
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Service",
        "NetworkPolicy",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
    ):
        for obj in state.items(kind):
            obj = copy.deepcopy(obj)
            if kind in ("Deployment", "StatefulSet"):
                n = (obj.get("spec") or {}).get("replicas", 1)
                obj["status"] = {"replicas": n, "readyReplicas": n, "availableReplicas": n}
                svc = spec.service(obj["metadata"]["name"])
                nodes = pool_nodes.get(svc.pool, []) if svc else []
                tmpl = obj["spec"]["template"]
                for r in range(n):
                    objs.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {
                                "name": f"{obj['metadata']['name']}-{r}",
                                "namespace": obj["metadata"].get("namespace", "default"),
                                "labels": dict(tmpl["metadata"]["labels"]),
                            },
                            "spec": {
                                **copy.deepcopy(tmpl["spec"]),
                                "nodeName": nodes[r % len(nodes)] if nodes else None,
                            },
                            "status": {
                                "phase": "Running",
                                "conditions": [{"type": "Ready", "status": "True"}],
                            },
                        }
                    )
            objs.append(obj)
    for i in range(filler_pods):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                # one in ten filler pods shares the services' namespace, as in a real cluster
                "metadata": {
                    "name": f"batch-{i:05d}",
                    "namespace": "default" if i % 10 == 0 else f"team-{i % 20:02d}",
                    "labels": {"app": f"batch-{i % 50}"},
                },
                "spec": {
                    "nodeName": f"general-{i % max(filler_nodes, 1):04d}",
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox:1.36",
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                        }
                    ],
                },
                "status": {"phase": "Running"},
            }
        )
    return objs


def as_list(objs: list[dict]) -> dict:
    """A v1 List, as `kubectl get ... -o yaml` prints it."""
    return {"apiVersion": "v1", "kind": "List", "items": objs, "metadata": {"resourceVersion": ""}}


class _NoAliases(yaml.SafeDumper):
    """kubectl never writes YAML anchors; neither do the fixtures (shared dicts are written out)."""

    def ignore_aliases(self, data):
        return True


def snapshot_text(objs: list[dict]) -> str:
    return yaml.dump(as_list(objs), Dumper=_NoAliases, sort_keys=False, default_flow_style=False, width=120)


if __name__ == "__main__":  # regenerate the committed snapshot
    (INDUSTRIAL / "snapshot.yaml").write_text(snapshot_text(cluster_objects()), encoding="utf-8")
