"""Benchmark `archkit check` on a generated spec of 1,000 stages (load + every rule).

Usage: .venv/bin/python bench/bench_check.py [--stages 1000] [--runs 7]
Prints the spec size, the median of in-process `api.check` runs and of whole-CLI runs
(`archkit check SPEC`, a fresh process each time: interpreter start, imports, load, rules).
Record the result in docs/benchmarks.md under "## archkit check".
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["ingress", "preprocess", "model", "postprocess", "store", "cache", "rules"]


def generate(n_stages: int) -> str:
    """A spec with `n_stages` stages in 20-stage chains with cross edges, services, calls, metrics."""
    per_service = 10
    n_services = n_stages // per_service
    out = [
        "apiVersion: archkit/v1",
        "metadata: {name: bench}",
        "budgets: {p50_ms: 5000, p99_ms: 20000, throughput_rps: 50}",
        "dataflow:",
        "  stages:",
    ]
    for i in range(n_stages):
        kind = KINDS[i % len(KINDS)] if i % 20 else "ingress"
        svc = f"svc{i // per_service}"
        line = f"    - {{id: s{i}, kind: {kind}, service: {svc}, p50_ms: 2, p99_ms: 20, failure_rate: 0.001"
        if kind == "model":
            line += (
                f", model: {{name: m{i}, version: '1', sha256: {'a' * 64}, instances: 2, "
                "batching: {max_batch_size: 8, preferred_batch_sizes: [4, 8], max_queue_delay_us: 1000, "
                "max_queue_size: 64}, service_time: [{batch_size: 1, compute_ms: 2}, "
                "{batch_size: 8, compute_ms: 6}], version_policy: {latest_num_versions: 2}, "
                f"rollback: {{golden_set: 's3://g/{i}'}}}}"
            )
        out.append(line + "}")
    out.append("  edges:")
    for i in range(n_stages - 1):
        if (i + 1) % 20:
            out.append(f"    - {{from: s{i}, to: s{i + 1}, transport: grpc}}")
            if i % 7 == 0 and (i + 2) % 20 > 1 and i + 2 < n_stages:
                out.append(f"    - {{from: s{i}, to: s{i + 2}, transport: http}}")
    n_calls = n_stages // 3
    out += ["controlflow:", "  start: c0", "  timeout_ms: 100000", "  calls:"]
    for i in range(n_calls):
        nxt = f"c{i + 1}" if i + 1 < n_calls else "ok"
        out.append(
            f"    - {{id: c{i}, target: s{i * 3}, timeout_ms: 50, retry: {{attempts: 1, backoff_ms: 10}}, "
            f"next: {nxt}, on_failure: degraded}}"
        )
    out += [
        "  terminals: [{id: ok}, {id: degraded, outcome: degraded}]",
        "topology:",
        "  node_pools:",
        "    - {id: cpu, count: 10}",
        "    - {id: gpu, count: 10, gpu: {model: T4, count: 1}, taints: [{key: nvidia.com/gpu}]}",
        "  services:",
    ]
    for j in range(n_services):
        out.append(
            f"    - {{id: svc{j}, pool: gpu, replicas: 2, image: 'r/x@sha256:{'b' * 64}', "
            "resources: {requests: {gpu: 1}, limits: {gpu: 1}}, "
            "security: {run_as_non_root: true, run_as_user: 1000}, ulimits: {nofile: 65536}, "
            "probes: {liveness: {http_path: /healthz, port: 8080}, readiness: {http_path: /ready, port: 8080}}}"
        )
    out += [
        "  os_tuning: {sysctls: {net.core.somaxconn: 65535}, ntp: true, max_clock_drift_ms: 10}",
        "observability:",
        "  clock_sync: true",
        "  stages:",
    ]
    for i in range(n_stages):
        out.append(f"    - {{stage: s{i}, latency: {{metric: stage_{i}_seconds}}}}")
    out += [
        "  golden_signals:",
        "    effective_qps: {metric: eq}",
        "    cold_start: {metric: cs}",
        "    drift: {metric: dr}",
    ]
    return "\n".join(out) + "\n"


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from archkit import api
    from archkit.checks import all_rules

    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "bench.yaml"
        spec.write_text(generate(args.stages), encoding="utf-8")
        rep = api.check([spec])
        spec_obj = rep.files[0].spec
        assert spec_obj is not None, [d.text() for d in rep.diagnostics][:5]
        print(
            f"spec: {args.stages} stages, {len(spec_obj.dataflow.edges)} edges, "
            f"{len(spec_obj.topology.services)} services, {len(spec_obj.controlflow.calls)} calls, "
            f"{spec.stat().st_size / 1024:.0f} KiB; {len(rep.diagnostics)} findings"
        )
        inproc, inproc_cpu = [], []
        for _ in range(args.runs):
            t, c = time.perf_counter(), time.process_time()
            api.check([spec])
            inproc.append(time.perf_counter() - t)
            inproc_cpu.append(time.process_time() - c)
        from archkit.checks import run_rules

        rules_cpu = []
        for _ in range(args.runs):
            c = time.process_time()
            run_rules(spec_obj)
            rules_cpu.append(time.process_time() - c)
        exe = Path(sys.executable).with_name("archkit")
        cli, cli_cpu = [], []
        for _ in range(args.runs):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(
                [str(exe), "check", str(spec)], capture_output=True, env={**os.environ, "NO_COLOR": "1"}
            )
            cli.append(time.perf_counter() - t)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    def ms(xs):
        return f"median {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f}, max {max(xs) * 1000:.0f})"

    print(
        f"in-process api.check (load + all rules), {args.runs} runs: wall {ms(inproc)}; CPU {ms(inproc_cpu)}"
    )
    print(
        f"rules only (all {len(all_rules())} rules on the loaded spec), {args.runs} runs: CPU {ms(rules_cpu)}"
    )
    print(f"CLI `archkit check SPEC` (fresh process), {args.runs} runs: wall {ms(cli)}; CPU {ms(cli_cpu)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
