"""Where the served path spends and idles its cores under N clients (not a benchmark).

    reference_service/.venv/bin/python reference_service/scripts/profile_served.py \
        [--clients 6] [--passes 2] [--env OCR_PRECISION=int8] [-- --rec-instances 3 ...]

Starts the service (``bench/bench_ocr.py``'s ``Served``; flags after ``--`` go to ``serve``),
sends the golden pages ``--passes`` times from ``--clients`` threads (Cache-Control: no-cache)
and prints: images/s; the cores the service used and the machine's busy cores (/proc/stat);
CPU ms per image; each service process's and busy thread's share of a core
(/proc/<pid>/task/*/stat); and Triton's own per-model queue and compute time per request
(nv_inference_*_duration_us before and after). Run it under /work/helpers/measure.
Recorded in reference_service/MEASUREMENTS.md, "Where the served path idles".
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import bench_ocr as B  # noqa: E402  (bench/ is not a package)
from reference_service.common.supervisor import descendants  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
_METRIC = re.compile(r'(nv_inference_\w+)\{model="(\w+)".*\} ([0-9.e+]+)')


def threads_cpu(pids: list[int]) -> dict[tuple[int, int], tuple[str, float]]:
    """(pid, tid) -> (the process's command line, CPU seconds so far) for every thread."""
    out = {}
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")[:80]
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                f = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[(pid, int(tid))] = (cmd, (int(f[11]) + int(f[12])) / TICK)
    return out


def machine() -> tuple[float, float]:
    """(all CPU seconds, idle + iowait seconds) since boot, all cores."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(f) / TICK, (f[3] + f[4]) / TICK


def triton(url: str) -> dict[tuple[str, str], float]:
    """(model, counter) -> value of Triton's nv_inference_* counters."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {(m[2], m[1]): float(m[3]) for m in map(_METRIC.match, text.splitlines()) if m}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--passes", type=int, default=2, help="times over the 60 golden pages")
    ap.add_argument("--env", action="append", default=[], help="NAME=value for the service")
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    env = dict(e.split("=", 1) for e in args.env)
    names = B.golden_names(B.GOLDEN)
    bodies = {n: (B.GOLDEN / n).read_bytes() for n in names}
    served = B.Served(env, extra=tuple(extra))
    try:
        for n in names[:4]:  # warm-up
            served.ocr(bodies[n])
        pids = [served.proc.pid, *descendants(served.proc.pid)]
        m0, c0, t0, w0 = triton(served.triton_metrics_url), threads_cpu(pids), machine(), time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(lambda n: served.ocr(bodies[n]), names * args.passes))
        wall = time.perf_counter() - w0
        m1, c1, t1 = triton(served.triton_metrics_url), threads_cpu(pids), machine()
    finally:
        served.stop()
    n = len(names) * args.passes
    used = {k: cpu - c0.get(k, (cmd, 0.0))[1] for k, (cmd, cpu) in c1.items()}
    total = sum(used.values())
    busy = (t1[0] - t0[0]) - (t1[1] - t0[1])
    print(f"env {env} serve {extra} clients {args.clients}: {n / wall:.2f} images/s over {n} pages")
    print(
        f"service {total / wall:.2f} cores (machine busy {busy / wall:.2f}), {total / n * 1e3:.0f} CPU ms/image"
    )
    per_proc: dict[tuple[int, str], float] = {}
    for (pid, _tid), cpu in used.items():
        key = (pid, c1[(pid, _tid)][0])
        per_proc[key] = per_proc.get(key, 0.0) + cpu
    for (pid, cmd), cpu in sorted(per_proc.items(), key=lambda x: -x[1]):
        if cpu > 0.01 * wall:
            print(f"  process {pid}: {cpu / wall:.2f} cores  {cmd}")
    for (pid, tid), cpu in sorted(used.items(), key=lambda x: -x[1]):
        if cpu > 0.05 * wall:
            print(f"    thread {tid} of {pid}: {cpu / wall:.2f} cores")
    for model in sorted({k[0] for k in m1}):
        d = {k[1]: v - m0.get(k, 0.0) for k, v in m1.items() if k[0] == model}
        reqs = d.get("nv_inference_request_success", 0.0) or 1.0
        per = ", ".join(
            f"{k.removeprefix('nv_inference_').removesuffix('_duration_us')} {v / reqs / 1e3:.1f}"
            for k, v in d.items()
            if k.endswith("_duration_us")
        )
        compute = d.get("nv_inference_compute_infer_duration_us", 0.0) / 1e6 / wall
        print(f"{model}: {reqs:.0f} requests; ms per request: {per}; compute time / wall {compute:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
