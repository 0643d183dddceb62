"""`archkit verify` at cluster scale: a snapshot with 500 nodes and 5,000 pods, from file and over the API.

Three ways of reading the same cluster, each followed by every Kubernetes check of
examples/industrial-inspection.yaml: the YAML snapshot (`kubectl get ... -o yaml`), the
same as JSON (`-o json`), and the live path through the real `kubernetes` client against
the loopback API stand-in of the tests (paginated, 500 objects per page; API calls counted).
Plus the whole CLI as a fresh process on the YAML snapshot. Target: under 2 s.

Run: .venv/bin/python bench/bench_verify.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC, as_list, cluster_objects, snapshot_text  # noqa: E402
from tests.verify.k8s_standin import StandIn  # noqa: E402

from archkit.spec import load_file  # noqa: E402
from archkit.verify import Status, load_snapshot, run  # noqa: E402
from archkit.verify.kube import namespaces_of  # noqa: E402
from archkit.verify.state import read_live  # noqa: E402

NODES, PODS, TARGET_S = 500, 5000, 2.0


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def median_s(fn, runs: int) -> tuple[float, object]:
    samples, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    spec = load_file(INDUSTRIAL_SPEC).spec
    base = cluster_objects()
    n_nodes = sum(o["kind"] == "Node" for o in base)
    n_pods = sum(o["kind"] == "Pod" for o in base)
    objs = cluster_objects(filler_nodes=NODES - n_nodes, filler_pods=PODS - n_pods)
    assert sum(o["kind"] == "Node" for o in objs) == NODES and sum(o["kind"] == "Pod" for o in objs) == PODS
    tmp = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    snap_yaml, snap_json = tmp / "snapshot.yaml", tmp / "snapshot.json"
    snap_yaml.write_text(snapshot_text(objs), encoding="utf-8")
    snap_json.write_text(json.dumps(as_list(objs)), encoding="utf-8")

    spec_namespaces = tuple(namespaces_of(spec))

    def offline(path: Path, namespaces=spec_namespaces):
        report = run(spec, load_snapshot(path, pod_namespaces=namespaces))
        assert report.total(Status.DRIFT) == 0 and report.total(Status.UNKNOWN) == 0
        return report

    rows = []
    t, _ = median_s(lambda: offline(snap_yaml), args.runs)
    rows.append(
        (
            f"`--snapshot` YAML ({snap_yaml.stat().st_size / 1e6:.1f} MB), in-process, pods of the "
            "spec's namespaces parsed",
            t,
            "0",
        )
    )
    t, _ = median_s(lambda: offline(snap_yaml, None), max(1, args.runs // 2))
    rows.append(("`--snapshot` YAML, every pod parsed (no namespace filter)", t, "0"))
    t, _ = median_s(lambda: offline(snap_json), args.runs)
    rows.append((f"`--snapshot` JSON ({snap_json.stat().st_size / 1e6:.1f} MB), in-process", t, "0"))
    with StandIn(objs) as standin:
        kc = standin.kubeconfig(tmp / "kubeconfig")
        read_live(kubeconfig=str(kc))  # import the kubernetes client once, outside the timing

        def live():
            before = len(standin.calls)
            state = read_live(kubeconfig=str(kc))
            report = run(spec, state)
            assert report.total(Status.DRIFT) == 0 and report.total(Status.UNKNOWN) == 0
            return state.api_calls, len(standin.calls) - before

        t, (calls, served) = median_s(live, args.runs)
        assert calls == served
        rows.append(("live: kubernetes client → loopback stand-in, 500 per page", t, str(calls)))
    cli = [
        str(Path(sys.executable).parent / "archkit"),
        "verify",
        str(INDUSTRIAL_SPEC),
        "--snapshot",
        str(snap_yaml),
        "--format",
        "json",
    ]
    subprocess.run(cli, capture_output=True, check=True, cwd=ROOT)  # warm the page cache
    t, _ = median_s(lambda: subprocess.run(cli, capture_output=True, check=True, cwd=ROOT), args.runs)
    rows.append(("`archkit verify --snapshot` YAML, whole CLI as a new process", t, "0"))
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"{NODES} nodes, {PODS} pods, {len(objs)} objects; median of {args.runs} runs"
    )
    print("| source | median ms | API calls | ratio to the 2 s target |")
    print("|---|---:|---:|---:|")
    for name, secs, calls in rows:
        print(f"| {name} | {secs * 1000:.0f} | {calls} | {secs / TARGET_S:.2f} |")


if __name__ == "__main__":
    main()
