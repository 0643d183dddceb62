"""Sources of state: snapshot (YAML List, JSON, multi-document), manifests folders, bad input, RBAC."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from archkit.verify.state import KINDS, StateError, load_manifests, load_snapshot, rbac_clusterrole
from tests.conftest import ROOT
from tests.verify.cluster_fixtures import INDUSTRIAL, as_list, cluster_objects, snapshot_text


def test_snapshot_fixture_is_current():
    """The committed snapshot is what the builder makes from the committed manifests."""
    assert (INDUSTRIAL / "snapshot.yaml").read_text(encoding="utf-8") == snapshot_text(cluster_objects()), (
        "regenerate with: .venv/bin/python -m tests.verify.cluster_fixtures"
    )


def test_snapshot_yaml_and_json_read_the_same(tmp_path):
    objs = cluster_objects()
    j = tmp_path / "snap.json"
    j.write_text(json.dumps(as_list(objs)), encoding="utf-8")
    a, b = load_snapshot(INDUSTRIAL / "snapshot.yaml"), load_snapshot(j)
    for k in KINDS:
        assert len(a.items(k.kind)) == len(b.items(k.kind)) == sum(o["kind"] == k.kind for o in objs)
    assert a.read("Node").status == "complete"
    assert a.read("StorageClass").status == "absent"
    assert (
        "kubectl get nodes,deploy,sts,ds,svc,netpol,pods,pvc,pv,sc -A -o yaml"
        in a.read("StorageClass").message
    )


def test_typed_lists_and_multi_document_snapshots(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(
        "kind: NodeList\napiVersion: v1\nitems:\n- metadata: {name: n1}\n---\n"
        "kind: Pod\napiVersion: v1\nmetadata: {name: p1, namespace: x}\n",
        encoding="utf-8",
    )
    s = load_snapshot(p)
    assert [n["metadata"]["name"] for n in s.items("Node")] == ["n1"]
    assert [n["metadata"]["name"] for n in s.items("Pod")] == ["p1"]


def test_secrets_in_manifests_are_dropped_unread(tmp_path):
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ndata: {password: aHVudGVyMg==}\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n",
        encoding="utf-8",
    )
    s = load_manifests(tmp_path)
    assert set(s.objects) == {"Service"}
    assert "aHVudGVyMg" not in repr(s.objects)
    assert s.origin(s.items("Service")[0]) == f"{tmp_path / 'a.yaml'}:10"


def test_manifest_origins_name_file_and_line():
    s = load_manifests(INDUSTRIAL / "manifests")
    triton = next(d for d in s.items("Deployment") if d["metadata"]["name"] == "triton")
    file, line = s.origin(triton).rsplit(":", 1)
    assert file.endswith("triton.yaml")
    assert Path(file).read_text().splitlines()[int(line) - 1] == "apiVersion: apps/v1"
    assert s.read("Node").status == "absent"


@pytest.mark.parametrize(
    "content,fragment",
    [
        ("kind: List\nitems: [\n", "s.yaml:3:1: YAML syntax error"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_snapshot_is_a_located_error(tmp_path, content, fragment):
    p = tmp_path / "s.yaml"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(StateError) as err:
        load_snapshot(p)
    assert fragment in str(err.value)


def test_missing_sources(tmp_path):
    with pytest.raises(StateError, match="file not found"):
        load_snapshot(tmp_path / "nope.yaml")
    with pytest.raises(StateError, match="is a folder"):
        load_snapshot(tmp_path)
    with pytest.raises(StateError, match="no .yaml, .yml or .json files"):
        load_manifests(tmp_path)
    with pytest.raises(StateError, match="folder not found"):
        load_manifests(tmp_path / "nope")


def test_clusterrole_is_read_only_and_matches_docs():
    text = rbac_clusterrole()
    role = yaml.safe_load(text)
    assert role["kind"] == "ClusterRole"
    verbs = {v for r in role["rules"] for v in r["verbs"]}
    assert verbs == {"get", "list"}
    resources = {res for r in role["rules"] for res in r["resources"]}
    assert resources == {k.resource for k in KINDS}
    assert "secrets" not in resources
    assert (ROOT / "docs" / "verify-clusterrole.yaml").read_text(encoding="utf-8") == text, (
        "regenerate with: .venv/bin/archkit verify --print-rbac > docs/verify-clusterrole.yaml"
    )


def test_clusterrole_validates_against_the_kubernetes_schema():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    kubernetes_validate.validate(yaml.safe_load(rbac_clusterrole()), "1.30", strict=True)


def test_yaml_snapshot_skips_pods_of_other_namespaces_unparsed(tmp_path):
    objs = cluster_objects(filler_nodes=3, filler_pods=40)
    p = tmp_path / "big.yaml"
    p.write_text(snapshot_text(objs), encoding="utf-8")
    full, fast = load_snapshot(p), load_snapshot(p, pod_namespaces=["default"])
    want = [o for o in full.items("Pod") if o["metadata"]["namespace"] == "default"]
    assert fast.items("Pod") == want and len(want) == 6 + 4  # the services' pods + 1 in 10 fillers
    for kind in ("Node", "Deployment", "Service", "NetworkPolicy", "PersistentVolume"):
        assert fast.items(kind) == full.items(kind)
    assert fast.read("Pod").message == "36 pod(s) outside namespaces default were skipped"


def test_yaml_snapshot_with_anchors_falls_back_to_a_whole_parse(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text(
        "apiVersion: v1\nitems:\n- kind: Pod\n  metadata: {name: a, namespace: x, labels: &l {app: a}}\n"
        "- kind: Pod\n  metadata: {name: b, namespace: default, labels: *l}\nkind: List\n",
        encoding="utf-8",
    )
    s = load_snapshot(p, pod_namespaces=["default"])
    assert [o["metadata"]["labels"] for o in s.items("Pod")] == [{"app": "a"}, {"app": "a"}]


def test_docs_list_every_code():
    from archkit.verify.report import CODES

    doc = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    missing = [c for c in CODES if f"| {c} |" not in doc]
    assert not missing, f"docs/verify.md lacks {missing}"


def test_unrendered_helm_template_is_named(tmp_path):
    (tmp_path / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
        "spec:\n  replicas: {{ .Values.replicas }}\n",
        encoding="utf-8",
    )
    with pytest.raises(StateError) as err:
        load_manifests(tmp_path)
    assert "deployment.yaml:4:" in str(err.value)
    assert "unrendered Helm template" in str(err.value)
