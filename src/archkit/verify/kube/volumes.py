"""A service's volumes: each declared mount (VK150) and its mount options (VK151)."""

from __future__ import annotations

from archkit.spec.model import Storage
from archkit.verify.kube.context import KubeContext, ServiceCheck, ServiceTarget
from archkit.verify.kube.helpers import meta, pod_spec
from archkit.verify.registry import Code


class Mounts(ServiceCheck):
    """Each declared filesystem mount is mounted at its path, with its type, read-only flag and options."""

    code = Code(
        "VK150",
        "volume mount",
        "Each declared mount must be mounted at its path with its type and read-only flag.",
        "seed 000 §3.3",
    )
    mount_options = Code(
        "VK151",
        "mount options",
        "NFS must be mounted soft with timeo/retrans, or a stuck server hangs the process in stat() forever.",
        "seed 000 §3.3",
    )
    also = (mount_options,)

    def run(self, ctx: KubeContext, t: ServiceTarget) -> None:
        r, label, svc, wl, c, ns, where = ctx.rec, t.label, t.svc, t.wl, t.c, t.ns, t.where
        vols = {v.get("name"): v for v in pod_spec(wl).get("volumes") or []}
        vmounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
        for mount in svc.mounts:
            storage: Storage | None = ctx.spec.by_id("storage").get(mount.storage)
            if storage is None or storage.type in ("s3", "redis", "database"):
                continue  # not a filesystem mount (or a dangling id, which `archkit check` reports)
            vm = vmounts.get(mount.path) or vmounts.get(mount.path.rstrip("/"))
            if vm is None:
                r.drift(
                    self.code,
                    label,
                    mount,
                    f"service '{svc.id}' does not mount '{storage.id}' at {mount.path} (no volumeMount there)",
                    field="path",
                    where=where,
                )
                continue
            vol = vols.get(vm.get("name"), {})
            vtype, src, pv, options, why = _volume_source(ctx, vol, ns)
            problems = []
            if mount.read_only and not vm.get("readOnly"):
                problems.append("it is mounted read-write, the spec declares read-only")
            expect = {
                "nfs": ("nfs",),
                "cephfs": ("cephfs",),
                "tmpfs": ("emptyDir",),
                "emptydir": ("emptyDir",),
                "hostpath": ("hostPath",),
                "local": ("local", "hostPath"),
                "pvc": ("pvc", "pv", "nfs", "cephfs", "local", "csi", "hostPath"),
            }.get(storage.type, ())
            if storage.type == "nfs" and vtype == "csi" and "nfs" in str(src.get("driver", "")):
                vtype = "nfs"
            if vtype == "pvc" and storage.type != "pvc" and options is None:
                pass  # unbound claim: the type is not knowable, the options check says so
            elif expect and vtype not in expect:
                problems.append(f"volume '{vm.get('name')}' is {vtype}, the spec declares {storage.type}")
            if storage.type == "tmpfs" and vtype == "emptyDir" and src.get("medium") != "Memory":
                problems.append("the emptyDir is not medium: Memory (tmpfs)")
            if storage.type == "nfs" and vtype == "nfs" and storage.source and src.get("server"):
                have_src = f"{src.get('server')}:{src.get('path')}"
                if have_src != storage.source:
                    problems.append(f"it mounts {have_src}, the spec declares {storage.source}")
            if problems:
                r.drift(
                    self.code,
                    label,
                    mount,
                    f"mount of '{storage.id}' at {mount.path} in '{svc.id}': {'; '.join(problems)}",
                    where=where,
                )
            else:
                r.ok(self.code, label, mount, f"{storage.id} mounted at {mount.path}", where=where)
            if storage.mount_options:
                _mount_options(ctx, t, storage, vm, vtype, pv, options, why)


def _volume_source(
    ctx: KubeContext, vol: dict, ns: str
) -> tuple[str, dict, dict | None, list[str] | None, str]:
    """(type, source dict, PV, mount options or None if unknowable, why unknown) of a pod volume."""
    for t in ("nfs", "cephfs", "hostPath", "emptyDir", "configMap", "secret", "csi"):
        if t in vol:
            return t, vol[t] or {}, None, None, ""
    claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
    if not claim:
        return "other", {}, None, None, ""
    why = ctx.why_not("PersistentVolumeClaim", "PersistentVolume")
    pvc = next((p for p in ctx.idx.in_ns("PersistentVolumeClaim", ns) if meta(p).get("name") == claim), None)
    if pvc is None:
        return (
            "pvc",
            {"claimName": claim},
            None,
            None,
            why or f"PersistentVolumeClaim '{claim}' not found",
        )
    pv_name = (pvc.get("spec") or {}).get("volumeName")
    pv = ctx.idx.pvs.get(pv_name) if pv_name else None
    if pv is None:
        for cand in ctx.idx.pvs.values():
            ref = (cand.get("spec") or {}).get("claimRef") or {}
            if ref.get("name") == claim and ref.get("namespace") in (None, ns):
                pv = cand
                break
    if pv is not None:
        pspec = pv.get("spec") or {}
        for kind in ("nfs", "cephfs", "hostPath", "local", "csi"):
            if kind in pspec:
                return kind, pspec[kind] or {}, pv, list(pspec.get("mountOptions") or []), ""
        return "pv", {}, pv, list(pspec.get("mountOptions") or []), ""
    sc_name = (pvc.get("spec") or {}).get("storageClassName")
    sc = ctx.idx.classes.get(sc_name) if sc_name else None
    if sc is not None:
        return "pvc", {"claimName": claim}, None, list(sc.get("mountOptions") or []), ""
    return (
        "pvc",
        {"claimName": claim},
        None,
        None,
        (
            why
            or ctx.why_not("StorageClass")
            or f"claim '{claim}' is bound to no PersistentVolume and its StorageClass is not known"
        ),
    )


def _mount_options(
    ctx: KubeContext,
    t: ServiceTarget,
    storage: Storage,
    vm: dict,
    vtype: str,
    pv: dict | None,
    options: list[str] | None,
    why: str,
) -> None:
    r, label, svc, where = ctx.rec, t.label, t.svc, t.where
    want = list(storage.mount_options)
    if vtype == "nfs" and pv is None and options is None:
        r.drift(
            Mounts.mount_options,
            label,
            storage,
            f"'{storage.id}' is an inline nfs volume in '{svc.id}', which cannot carry mount options: the "
            f"node mounts it hard, without {','.join(want)}; use a PersistentVolume with "
            f"mountOptions [{', '.join(want)}] (seed 000 §3.3)",
            field="mount_options",
            where=where,
        )
        return
    if options is None:
        r.unknown(
            Mounts.mount_options,
            label,
            storage,
            f"mount options of '{storage.id}' in '{svc.id}' cannot be read: {why or 'unknown volume'}",
            field="mount_options",
            where=where,
        )
        return
    have = {o.strip() for opt in options for o in str(opt).split(",")}
    missing = [o for o in want if o not in have]
    src = f"PersistentVolume '{meta(pv).get('name')}'" if pv is not None else "its StorageClass"
    if missing:
        r.drift(
            Mounts.mount_options,
            label,
            storage,
            f"{storage.type.upper()} volume '{storage.id}' ({src}) is mounted without "
            f"{', '.join(missing)}: a stuck server hangs every process that touches {vm.get('mountPath')} "
            "(seed 000 §3.3)",
            field="mount_options",
            where=where,
        )
    else:
        r.ok(
            Mounts.mount_options,
            label,
            storage,
            f"mount options {','.join(want)} set on {src}",
            field="mount_options",
            where=where,
        )
