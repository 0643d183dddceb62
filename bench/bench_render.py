"""Benchmark `archkit render` against the bare cost of its renderers (PlantUML JVM + dot calls).

For each spec (the examples, the reference spec, generated 100- and 1,000-stage specs) it
times `api.generate` of the four diagrams and the review page (SVG), then the renderers alone
on the very same sources: one `java -jar plantuml.jar -tsvg` call for the PlantUML sources and
one `dot -Tsvg` per DOT source, run with the same parallelism archkit uses. Prints a Markdown
table (median of --repeat runs).

    .venv/bin/python bench/bench_render.py [--repeat 3] [--sizes 100,1000] [--write-spec N PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from archkit import api
from archkit.generators import all_generators
from archkit.generators.renderers import find_dot, find_java, find_plantuml_jar, icon_root
from archkit.spec.model import Spec

DIAGRAMS = ("dataflow", "controlflow", "topology", "faulttree", "review")
KINDS = ["ingress", "preprocess", "model", "postprocess", "store", "cache", "queue", "rules"]


def synthetic_spec(n: int) -> dict:
    """A spec of `n` stages: a pipeline with fan-out every 5th stage, three planes, n/10 calls,
    n/10 services on 4 pools, n/50 fault trees of 5 events."""
    stages, edges = [], []
    for i in range(n):
        plane = "policy" if i % 17 == 5 else "control" if i % 13 == 3 else "data"
        st = {
            "id": f"s{i}",
            "name": f"Stage {i} ({KINDS[i % len(KINDS)]})",
            "kind": KINDS[i % len(KINDS)],
            "plane": plane,
            "p50_ms": 1 + i % 7,
            "p99_ms": 5 + (i * 7) % 90,
            "gb_per_hour": round(0.1 * (i % 9), 1),
            "failure_rate": 0.02 if i % 11 == 0 else 0.001,
        }
        if i % 9 == 0:
            st["data_classes"] = ["pii"]
            st["compliance"] = ["GDPR Art.9"]
        stages.append(st)
        if i:
            edges.append({"from": f"s{i - 1}", "to": f"s{i}", "transport": "grpc", "bytes": 1000 + i})
        if i % 5 == 0 and i + 3 < n:
            edges.append({"from": f"s{i}", "to": f"s{i + 3}", "transport": "kafka", "mode": "async"})
    n_calls = max(2, n // 10)
    calls = []
    for j in range(n_calls):
        calls.append(
            {
                "id": f"c{j}",
                "target": f"s{(j * 10) % n}",
                "timeout_ms": 100,
                "retry": {"attempts": 1, "backoff_ms": 20},
                "next": f"d{j}" if j % 3 == 0 else (f"c{j + 1}" if j + 1 < n_calls else "ok"),
                "on_failure": "degraded",
            }
        )
    decisions = [
        {
            "id": f"d{j}",
            "criterion": f"score{j} > 0.5",
            "source": "feature store",
            "branches": [
                {"when": "yes", "next": f"c{j + 1}" if j + 1 < n_calls else "ok"},
                {"when": "no", "next": "degraded"},
            ],
            "on_failure": "degraded",
        }
        for j in range(0, n_calls, 3)
    ]
    pools = [
        {
            "id": f"pool{k}",
            "role": "inference" if k % 2 else "preprocess",
            "count": 2,
            "cpu_cores": 16,
            "memory_gib": 64,
            "networks": ["biz"],
            **(
                {"gpu": {"model": "H200", "count": 8, "mig_profile": "1g.18gb", "sharing": "mig"}}
                if k % 2
                else {}
            ),
        }
        for k in range(4)
    ]
    services = [
        {
            "id": f"svc{j}",
            "pool": f"pool{j % 4}",
            "replicas": 2,
            "resources": {"requests": {"cpu_cores": 2, "memory_mib": 2048}},
            "ingress": [{"from": "service:svc0" if j else "public", "ports": [8080]}],
        }
        for j in range(max(1, n // 10))
    ]
    trees = [
        {
            "id": f"ft{t}",
            "top": "top",
            "gates": [
                {"id": "top", "type": "or", "inputs": ["a", "g"]},
                {"id": "g", "type": "and", "inputs": ["b", "c", "d", "e"]},
            ],
            "events": [
                {
                    "id": x,
                    "check": f"curl -sf http://127.0.0.1:800{t % 10}/{x}",
                    "expect": "ok",
                    "probability": 0.01,
                }
                for x in "abcde"
            ],
        }
        for t in range(max(1, n // 50))
    ]
    return {
        "apiVersion": "archkit/v1",
        "metadata": {"name": f"synthetic-{n}"},
        "budgets": {"p50_ms": 100, "p99_ms": 1000, "throughput_rps": 100},
        "dataflow": {"stages": stages, "edges": edges},
        "controlflow": {
            "start": "c0",
            "calls": calls,
            "decisions": decisions,
            "terminals": [{"id": "ok"}, {"id": "degraded", "outcome": "degraded"}],
        },
        "topology": {
            "node_pools": pools,
            "networks": [{"id": "biz", "cidr": "10.0.0.0/16", "mtu": 9000}],
            "services": services,
        },
        "faulttrees": trees,
    }


def _cpu() -> float:
    """CPU seconds of this process and its finished children (renderers run as children)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def archkit_run(spec: Spec, name: str) -> tuple[float, float, dict[str, str]]:
    t0, c0 = time.perf_counter(), _cpu()
    files, _ = api.generate(spec, name, only=list(DIAGRAMS), formats=("svg",))
    dt, dc = time.perf_counter() - t0, _cpu() - c0
    return dt, dc, {k: v for k, v in files.items() if k.endswith((".dot", ".puml"))}


def bare_run(sources: dict[str, str]) -> tuple[float, float]:
    """The renderers alone on the same sources: one PlantUML JVM, one dot per DOT file, in parallel."""
    java, jar, dot = find_java(), find_plantuml_jar(), find_dot()
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (rel, src) in enumerate(sorted(sources.items())):
            p = Path(tmp, f"d{i}{Path(rel).suffix}")
            p.write_text(src, encoding="utf-8")
            paths.append(p)
        puml = [str(p) for p in paths if p.suffix == ".puml"]
        dots = [p for p in paths if p.suffix == ".dot"]
        t0, c0 = time.perf_counter(), _cpu()
        with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
            futs = (
                [
                    pool.submit(
                        subprocess.run,
                        [
                            java,
                            "-Djava.awt.headless=true",
                            "-jar",
                            str(jar),
                            "-tsvg",
                            "-nometadata",
                            "-o",
                            str(Path(tmp, "out")),
                            *puml,
                        ],
                        capture_output=True,
                        check=True,
                    )
                ]
                if puml
                else []
            )
            futs += [
                pool.submit(
                    subprocess.run,
                    [dot, "-Tsvg", str(p), "-o", str(p) + ".svg"],
                    capture_output=True,
                    check=True,
                    cwd=str(icon_root() or tmp),
                )
                for p in dots
            ]
            for f in futs:
                f.result()
        return time.perf_counter() - t0, _cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument(
        "--write-spec", nargs=2, metavar=("N", "PATH"), help="only write a synthetic spec and exit"
    )
    args = ap.parse_args()
    if args.write_spec:
        Path(args.write_spec[1]).write_text(
            yaml.safe_dump(synthetic_spec(int(args.write_spec[0])), sort_keys=False)
        )
        return
    all_generators()
    specs: list[tuple[str, Spec]] = []
    for p in sorted((ROOT / "examples").glob("*.yaml")) + sorted((ROOT / "specs").glob("*.yaml")):
        res = api.load(p)
        if res.spec is not None:
            specs.append((p.name, res.spec))
    for n in (int(x) for x in args.sizes.split(",") if x):
        specs.append((f"synthetic {n} stages", Spec.model_validate(synthetic_spec(n))))
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}, "
        f"jar {find_plantuml_jar().name}"
    )
    print(
        "| spec | archkit wall (s) | renderers wall (s) | wall overhead | archkit CPU (s) | renderers CPU (s) "
        "| CPU overhead |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    medians = {}
    for name, spec in specs:
        ours, bare, ours_cpu, bare_cpu = [], [], [], []
        for _ in range(args.repeat):
            dt, dc, sources = archkit_run(spec, name)
            ours.append(dt)
            ours_cpu.append(dc)
            bt, bc = bare_run(sources)
            bare.append(bt)
            bare_cpu.append(bc)
        a, b = statistics.median(ours), statistics.median(bare)
        ac, bc = statistics.median(ours_cpu), statistics.median(bare_cpu)
        medians[name] = a
        print(
            f"| {name} | {a:.2f} | {b:.2f} | {100 * (a - b) / b:+.0f}% | {ac:.2f} | {bc:.2f} "
            f"| {100 * (ac - bc) / bc:+.0f}% |",
            flush=True,
        )
    sizes = [int(x) for x in args.sizes.split(",") if x]
    if len(sizes) == 2:
        small, big = (medians[f"synthetic {n} stages"] for n in sizes)
        print(f"\n{sizes[1]} stages / {sizes[0]} stages: {big / small:.1f}×")


if __name__ == "__main__":
    main()
