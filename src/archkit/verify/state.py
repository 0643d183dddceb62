"""One model of cluster state, read from a live cluster, a `kubectl get -o yaml` snapshot or manifests.

The three sources fill the same `ClusterState`: a list of plain Kubernetes objects (the
dicts the API serves, camelCase keys) per kind, plus how each kind was read. The checks in
`archkit.verify.kube` never know where the objects came from, only whether a kind is
complete, partial, forbidden, failed or absent (manifests carry no nodes and no pods).

Secrets are never read: no list call for them exists here, and Secret documents in a
manifests folder are dropped unread.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from archkit.endpoints import AllowList
from archkit.errors import InputError
from archkit.verify.reach import judge

try:  # the C parser is ~10x faster on big snapshots
    _YamlLoader = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - libyaml missing
    _YamlLoader = yaml.SafeLoader


@dataclass(frozen=True)
class KindSpec:
    """One kind archkit reads: its API group and resource, and the client calls that list it."""

    kind: str
    group: str
    resource: str
    namespaced: bool
    api: str
    list_all: str
    list_namespaced: str | None = None


# Every kind `archkit verify` reads; the ClusterRole (`rbac_clusterrole`) is built from this
# list, so the permissions asked for are exactly the ones used. No Secrets, ever.
KINDS: tuple[KindSpec, ...] = (
    KindSpec("Node", "", "nodes", False, "CoreV1Api", "list_node"),
    KindSpec("Pod", "", "pods", True, "CoreV1Api", "list_pod_for_all_namespaces", "list_namespaced_pod"),
    KindSpec(
        "Service",
        "",
        "services",
        True,
        "CoreV1Api",
        "list_service_for_all_namespaces",
        "list_namespaced_service",
    ),
    KindSpec(
        "PersistentVolumeClaim",
        "",
        "persistentvolumeclaims",
        True,
        "CoreV1Api",
        "list_persistent_volume_claim_for_all_namespaces",
        "list_namespaced_persistent_volume_claim",
    ),
    KindSpec("PersistentVolume", "", "persistentvolumes", False, "CoreV1Api", "list_persistent_volume"),
    KindSpec(
        "Deployment",
        "apps",
        "deployments",
        True,
        "AppsV1Api",
        "list_deployment_for_all_namespaces",
        "list_namespaced_deployment",
    ),
    KindSpec(
        "StatefulSet",
        "apps",
        "statefulsets",
        True,
        "AppsV1Api",
        "list_stateful_set_for_all_namespaces",
        "list_namespaced_stateful_set",
    ),
    KindSpec(
        "DaemonSet",
        "apps",
        "daemonsets",
        True,
        "AppsV1Api",
        "list_daemon_set_for_all_namespaces",
        "list_namespaced_daemon_set",
    ),
    KindSpec(
        "NetworkPolicy",
        "networking.k8s.io",
        "networkpolicies",
        True,
        "NetworkingV1Api",
        "list_network_policy_for_all_namespaces",
        "list_namespaced_network_policy",
    ),
    KindSpec("StorageClass", "storage.k8s.io", "storageclasses", False, "StorageV1Api", "list_storage_class"),
)
KIND_NAMES = tuple(k.kind for k in KINDS)
# What `kubectl get nodes,deploy,sts,ds,svc,netpol,pods -A -o yaml` returns: a snapshot made
# with that command has read these kinds completely even when it holds none of them.
SNAPSHOT_BASE_KINDS = ("Node", "Deployment", "StatefulSet", "DaemonSet", "Service", "NetworkPolicy", "Pod")
SNAPSHOT_COMMAND = "kubectl get nodes,deploy,sts,ds,svc,netpol,pods,pvc,pv,sc -A -o yaml > snapshot.yaml"

COMPLETE, PARTIAL, FORBIDDEN, FAILED, ABSENT = "complete", "partial", "forbidden", "failed", "absent"


class StateError(InputError):
    """The state source cannot be used at all (missing file, bad YAML, no kubeconfig)."""


@dataclass
class KindRead:
    """How one kind was read: status, a message a person can act on, and the calls it took."""

    status: str = COMPLETE
    message: str = ""
    calls: int = 0


@dataclass
class ClusterState:
    """Kubernetes objects by kind, and how completely each kind could be read."""

    mode: str  # live | snapshot | manifests
    source: str  # e.g. "snapshot fixtures/snap.yaml"
    objects: dict[str, list[dict]] = field(default_factory=dict)
    reads: dict[str, KindRead] = field(default_factory=dict)
    origins: dict[int, str] = field(default_factory=dict)  # id(obj) -> "file:line"
    api_calls: int = 0

    def items(self, kind: str) -> list[dict]:
        return self.objects.get(kind, [])

    def read(self, kind: str) -> KindRead:
        return self.reads.get(kind) or KindRead(ABSENT, f"no {kind} objects were read")

    def usable(self, kind: str) -> bool:
        """True when absence of an object of this kind means it does not exist."""
        return self.read(kind).status == COMPLETE

    def origin(self, obj: dict) -> str:
        """Where an object came from: a manifest's file:line, or `Kind namespace/name`."""
        got = self.origins.get(id(obj))
        if got:
            return got
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace")
        return f"{obj.get('kind', '?')} {ns + '/' if ns else ''}{meta.get('name', '?')}"

    def add(self, obj: dict, origin: str | None = None) -> None:
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if not isinstance(kind, str) or kind not in KIND_NAMES:
            return  # Secrets, ConfigMaps and everything else are not kept
        self.objects.setdefault(kind, []).append(obj)
        if origin:
            self.origins[id(obj)] = origin


# --------------------------------------------------------------------------- files


def _flatten(doc: Any) -> Iterable[dict]:
    """Objects of a document: a v1 List (kubectl's output) yields its items."""
    if not isinstance(doc, dict) or not isinstance(doc.get("kind", ""), str):
        return  # not a Kubernetes object (a kind that is not text cannot name one)
    if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
        item_kind = doc["kind"][:-4] if doc["kind"] != "List" else None
        items = doc.get("items")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                if item_kind and "kind" not in item:
                    item["kind"] = item_kind
                yield from _flatten(item)
    elif "kind" in doc:
        yield doc


_DOC_SPLIT = re.compile(r"^---[ \t]*(?:#.*)?$", re.M)


def _documents(text: str, file: str) -> Iterable[tuple[Any, int]]:
    """(document, first line) for each YAML document in `text`; JSON goes through json."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, and int digits over Python's limit
            raise StateError(f"{file}: not valid JSON: {str(exc)[:200]}") from None
        except RecursionError:
            raise StateError(f"{file}: JSON document nests too deeply") from None
        yield doc, 1
        return
    starts = [0] + [m.end() for m in _DOC_SPLIT.finditer(text)]
    ends = [m.start() for m in _DOC_SPLIT.finditer(text)] + [len(text)]
    for start, end in zip(starts, ends, strict=True):
        chunk = text[start:end]
        if not chunk.strip():
            continue
        line = text.count("\n", 0, start) + 1
        try:
            doc = yaml.load(chunk, Loader=_YamlLoader)  # noqa: S506 - a safe loader
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            at = f"{file}:{line + mark.line}:{mark.column + 1}" if mark else f"{file}:{line}"
            hint = (
                "; this looks like an unrendered Helm template: give the output of `helm template` "
                "(or `kustomize build`)"
                if "{{" in chunk
                else ""
            )
            raise StateError(f"{at}: YAML syntax error: {exc.problem or exc}{hint}") from None
        except yaml.YAMLError as exc:
            raise StateError(f"{file}:{line}: YAML error: {exc}") from None
        except RecursionError:
            raise StateError(f"{file}:{line}: YAML document nests too deeply") from None
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            # PyYAML's constructors raise these on `!!int abc`, `2024-13-01`, `!!timestamp x` ...
            raise StateError(
                f"{file}:{line}: bad YAML value ({type(exc).__name__}: {str(exc)[:120]})"
            ) from None
        if doc is not None:
            # the document's first line of YAML (not a comment), which is what an editor should jump to
            skip = 0
            for text_line in chunk.splitlines():
                if text_line.strip() and not text_line.lstrip().startswith("#"):
                    break
                skip += 1
            yield doc, line + skip


# A snapshot of a 5,000-node cluster is ~100 MiB of YAML; past this it is not a snapshot (or it
# is /dev/zero, a pipe that never ends): refused after reading cap + 1 bytes, never more.
MAX_STATE_BYTES = 256 * 1024 * 1024


def _read_text(path: Path) -> str:
    from archkit.spec.loader import ReadError, read_capped

    try:
        raw = read_capped(path, MAX_STATE_BYTES, what="a snapshot or manifest")
    except ReadError as exc:
        raise StateError(f"{path}: {exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise StateError(f"{path}:{line}: not UTF-8 text") from None


_ITEM_KIND = re.compile(r"^  kind: ['\"]?(\w+)['\"]?[ \t]*$", re.M)
_ITEM_NS = re.compile(r"^    namespace: ['\"]?([^'\"\s]+)['\"]?[ \t]*$", re.M)


def _kubectl_list_items(text: str) -> list[str] | None:
    """The item chunks of a YAML v1 List as kubectl prints it (items at column 0), else None."""
    if not text.startswith(("apiVersion:", "items:", "kind:", "metadata:")) or "\nitems:\n- " not in text:
        return None
    chunks: list[str] = []
    start: int | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        if line.startswith("- "):
            if start is not None:
                chunks.append(text[start:pos])
            start = pos
        elif line[:1] not in (" ", "\n", "#", "") and start is not None:  # a top-level key ends the items
            chunks.append(text[start:pos])
            start = None
        pos += len(line)
    if start is not None:
        chunks.append(text[start:pos])
    return chunks


def _load_items(state: ClusterState, chunks: list[str], text: str, p: Path, wanted: set[str]) -> int:
    """Parse the item chunks of a kubectl List, skipping Pods outside `wanted`; returns how many were skipped."""
    skipped = 0
    line = text.count("\n", 0, text.index("\nitems:\n- ")) + 3
    for chunk in chunks:
        kinds = _ITEM_KIND.findall(chunk)
        if kinds == ["Pod"]:
            ns = _ITEM_NS.findall(chunk)
            if len(ns) == 1 and ns[0] not in wanted:
                skipped += 1
                line += chunk.count("\n")
                continue
        if len(kinds) == 1 and kinds[0] not in KIND_NAMES:
            line += chunk.count("\n")
            continue  # Secrets, ConfigMaps, ...: not parsed at all
        for doc, _ in _documents(chunk, f"{p}:{line}"):
            for item in doc if isinstance(doc, list) else [doc]:
                for obj in _flatten(item):
                    state.add(obj)
        line += chunk.count("\n")
    return skipped


def load_snapshot(path: str | os.PathLike, pod_namespaces: Iterable[str] | None = None) -> ClusterState:
    """State from `kubectl get ... -A -o yaml` (a v1 List; JSON or multi-document YAML also work).

    With `pod_namespaces`, Pods of other namespaces in a kubectl-style YAML List are skipped
    without being parsed: a snapshot of a large cluster is mostly Pods nobody asked about,
    and YAML parsing costs ~1 ms per Pod (JSON snapshots are parsed whole: it is fast).
    """
    p = Path(path)
    if p.is_dir():
        raise StateError(f"{p}: is a folder; --snapshot takes the file `{SNAPSHOT_COMMAND}` writes")
    text = _read_text(p)
    state = ClusterState("snapshot", f"snapshot {p}")
    chunks = _kubectl_list_items(text) if pod_namespaces is not None else None
    skipped = 0
    if chunks is not None:
        try:
            skipped = _load_items(state, chunks, text, p, set(pod_namespaces or ()))
        except StateError:  # not kubectl's layout after all (e.g. anchors across items): read it whole
            state.objects.clear()
            chunks, skipped = None, 0
    if chunks is None:
        for doc, _line in _documents(text, str(p)):
            for obj in _flatten(doc):
                state.add(obj)
    for kind in KIND_NAMES:
        if kind == "Pod" and skipped:
            state.reads[kind] = KindRead(
                COMPLETE,
                f"{skipped} pod(s) outside namespaces {', '.join(sorted(pod_namespaces or ()))} were skipped",
            )
        elif kind in SNAPSHOT_BASE_KINDS or state.items(kind):
            state.reads[kind] = KindRead(COMPLETE)
        else:
            state.reads[kind] = KindRead(
                ABSENT, f"the snapshot holds no {kind} objects; make it with `{SNAPSHOT_COMMAND}`"
            )
    return state


def load_manifests(folder: str | os.PathLike) -> ClusterState:
    """State from rendered manifests (Helm/kustomize output): the intended objects, no nodes or pods."""
    root = Path(folder)
    if not root.exists():
        raise StateError(f"{root}: folder not found")
    files = (
        [root]
        if root.is_file()
        else sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in {".yaml", ".yml", ".json"})
    )
    if not files:
        raise StateError(f"{root}: no .yaml, .yml or .json files in it")
    state = ClusterState("manifests", f"manifests {root}")
    for f in files:
        rel = str(f)
        for doc, line in _documents(_read_text(f), rel):
            for obj in _flatten(doc):
                state.add(obj, f"{rel}:{line}")
    for kind in KIND_NAMES:
        if kind in ("Node", "Pod"):
            state.reads[kind] = KindRead(ABSENT, "manifests describe no nodes or running pods")
        else:
            state.reads[kind] = KindRead(COMPLETE)
    return state


# --------------------------------------------------------------------------- live cluster

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _client_config(
    kubeconfig: str | None, context: str | None, in_cluster: bool, service_account_dir: str | None = None
):
    """A kubernetes client Configuration from a kubeconfig (and context) or the pod's service account."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    cfg = client.Configuration()
    try:
        if in_cluster:
            # the same loader as config.load_incluster_config(), with the token folder as a parameter
            sa = Path(service_account_dir or SERVICE_ACCOUNT_DIR)
            InClusterConfigLoader(
                token_filename=str(sa / "token"), cert_filename=str(sa / "ca.crt")
            ).load_and_set(cfg)
            where = "in-cluster service account"
        else:
            path = kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
            if path and not Path(path).exists():
                raise StateError(f"kubeconfig {path} not found")
            if path is None and not Path(os.path.expanduser("~/.kube/config")).exists():
                if os.environ.get("KUBERNETES_SERVICE_HOST"):
                    config.load_incluster_config(client_configuration=cfg)
                    return cfg, "in-cluster service account"
                raise StateError(
                    "no kubeconfig (~/.kube/config, $KUBECONFIG or --kubeconfig) and not "
                    "running in a pod; give --snapshot or --manifests to verify offline"
                )
            config.load_kube_config(config_file=path, context=context, client_configuration=cfg)
            where = f"context {context}" if context else "current context"
    except ConfigException as exc:
        raise StateError(f"cannot use the cluster configuration: {exc}") from None
    # Read-only checks should answer fast: no silent connection retries (urllib3 would retry
    # three times), the per-request timeout is the caller's.
    cfg.retries = 0
    return cfg, where


def _http_reason(status: int, kind: KindSpec, scope: str) -> tuple[str, str]:
    what = f"list {kind.resource}{'' if not kind.group else '.' + kind.group}{' ' + scope if scope else ''}"
    if status == 401:
        return FORBIDDEN, (
            f"401 Unauthorized: the API server did not accept the credentials "
            f"({what}); refresh the kubeconfig token or the service account's"
        )
    if status == 403:
        return FORBIDDEN, (
            f"403 Forbidden: this identity may not {what}; apply the ClusterRole "
            "from `archkit verify --print-rbac`"
        )
    if status == 410:
        return PARTIAL, (
            f"410 Gone: the list continue token expired mid-way ({what}); the objects read so far are used"
        )
    return FAILED, f"HTTP {status} from the API server ({what})"


def read_live(
    kubeconfig: str | None = None,
    context: str | None = None,
    in_cluster: bool = False,
    namespaces: Iterable[str] = (),
    timeout_s: float = 10.0,
    page_size: int = 500,
    kinds: Iterable[str] = KIND_NAMES,
    service_account_dir: str | None = None,
    allow: Iterable[str] | AllowList = (),
) -> ClusterState:
    """State from a live cluster: one paginated list call chain per kind, never one call per object.

    A 403 on an all-namespaces list falls back to per-namespace lists for the namespaces the
    spec names (a namespaced Role is enough then). A network error (timeout, refused) stops
    reading: every later kind is reported with the same message instead of waiting again.
    """
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    cfg, where = _client_config(kubeconfig, context, in_cluster, service_account_dir)
    # the endpoint policy: the API server must be loopback or allowed (the kubernetes client
    # connects to the judged address; over TLS the name stays the certificate's and SNI's)
    server = str(cfg.host)
    ep = judge(server, allow, "Kubernetes API server").endpoint
    if ep.scheme == "https" and not cfg.tls_server_name and ep.host != str(ep.address):
        cfg.tls_server_name = ep.host
    cfg.host = ep.base
    refresh = cfg.refresh_api_key_hook
    if refresh is not None:  # the kubeconfig loader's token refresh sets the host again on every call

        def pinned_refresh(c: Any) -> None:
            refresh(c)
            c.host = ep.base

        cfg.refresh_api_key_hook = pinned_refresh
    api_client = client.ApiClient(cfg)
    state = ClusterState("live", f"live cluster {server} ({where})")
    namespaces = sorted(set(namespaces))
    apis: dict[str, Any] = {}
    network_error: str | None = None

    def list_all(method: Callable, read: KindRead, spec: KindSpec, **kw) -> tuple[list[dict], int | None]:
        """Follow `continue` tokens; returns the items read and the HTTP status that stopped it."""
        nonlocal network_error
        items: list[dict] = []
        cont: str | None = None
        while True:
            read.calls += 1
            state.api_calls += 1
            try:
                resp = method(
                    limit=page_size, _continue=cont, _preload_content=False, _request_timeout=timeout_s, **kw
                )
                data = json.loads(resp.data)
            except ApiException as exc:
                return items, int(exc.status or 0)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                reason = getattr(exc, "reason", None) or exc
                network_error = f"cannot reach the API server at {server}: {reason}"
                return items, -1
            except ValueError:
                return items, -2
            for obj in data.get("items") or []:
                obj.setdefault("kind", spec.kind)
                items.append(obj)
            cont = (data.get("metadata") or {}).get("continue")
            if not cont:
                return items, None

    wanted = set(kinds)
    for spec in KINDS:
        if spec.kind not in wanted:
            continue
        read = KindRead()
        state.reads[spec.kind] = read
        state.objects.setdefault(spec.kind, [])
        if network_error:
            read.status, read.message = FAILED, network_error
            continue
        api = apis.setdefault(spec.api, getattr(client, spec.api)(api_client))
        items, stop = list_all(getattr(api, spec.list_all), read, spec)
        if stop == 403 and spec.namespaced and namespaces and not items:
            # no cluster-wide permission: try the spec's namespaces one by one
            per_ns: list[str] = []
            for ns in namespaces:
                got, ns_stop = list_all(getattr(api, spec.list_namespaced), read, spec, namespace=ns)
                items += got
                if ns_stop is not None:
                    per_ns.append(ns)
                    stop = ns_stop
                    if ns_stop == -1:
                        break
            if not per_ns:
                stop = None
                read.message = (
                    f"read per namespace ({', '.join(namespaces)}): no cluster-wide list permission"
                )
        state.objects[spec.kind] = items
        if stop is None:
            continue
        if stop == -1:
            read.status, read.message = (PARTIAL if items else FAILED), network_error or ""
        elif stop == -2:
            read.status, read.message = (
                (PARTIAL if items else FAILED),
                "the API server sent a non-JSON answer",
            )
        else:
            status, message = _http_reason(stop, spec, "in all namespaces" if spec.namespaced else "")
            read.status = PARTIAL if items else status
            read.message = message
    api_client.close()
    return state


# --------------------------------------------------------------------------- RBAC


def rbac_clusterrole(name: str = "archkit-verify") -> str:
    """A ClusterRole with only get/list on the kinds `archkit verify` reads (no Secrets)."""
    groups: dict[str, list[str]] = {}
    for k in KINDS:
        groups.setdefault(k.group, []).append(k.resource)
    lines = [
        "# ClusterRole for `archkit verify`: read-only (get, list) on exactly the kinds it reads.",
        "# Secrets are not among them. Bind it to the identity that runs the check, e.g.",
        f"#   kubectl create clusterrolebinding {name} --clusterrole={name} --serviceaccount=NS:SA",
        "apiVersion: rbac.authorization.k8s.io/v1",
        "kind: ClusterRole",
        "metadata:",
        f"  name: {name}",
        "rules:",
    ]
    for group in sorted(groups):
        lines.append(f"  - apiGroups: [{json.dumps(group)}]")
        lines.append(f"    resources: [{', '.join(sorted(groups[group]))}]")
        lines.append("    verbs: [get, list]")
    return "\n".join(lines) + "\n"
