"""Benchmark the continuous-batching LLM simulation: 100,000 requests (prompt 512, output 256).

Usage: .venv/bin/python bench/bench_llm.py [--requests 100000] [--runs 3] [--peer 2000] [--rate 20]
Llama-3.1-8B bf16 on one H100 (vLLM defaults: 256 sequences, 8,192 tokens per iteration), Poisson
arrivals at `--rate` req/s (20: about 60 % of the replica's capacity). Prints the median wall and
CPU time of the compiled simulation (numba; the first, compiling call timed apart) and the same
loop as plain Python on `--peer` requests (scaled per request), with the load average before and
after. Record the result in docs/benchmarks.md under "## LLM continuous-batching simulation".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from archkit.perf.llm import sim, sim_kernel  # noqa: E402
from archkit.perf.llm.model import replica  # noqa: E402
from archkit.spec.llm import LlmStage  # noqa: E402
from archkit.spec.llm_catalogue import ACCELERATORS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peer", type=int, default=2_000, help="requests for the plain-Python peer run")
    ap.add_argument("--rate", type=float, default=20.0)
    args = ap.parse_args()
    stage = LlmStage.model_validate(
        {
            "engine": {"name": "vllm"},
            "model": {"preset": "Llama-3.1-8B"},
            "workload": {"prompt_tokens": {"mean_tokens": 512}, "output_tokens": {"mean_tokens": 256}},
        }
    )
    rep = replica(stage, ACCELERATORS["H100-SXM"])

    def requests(n: int) -> sim.Requests:
        arr = np.cumsum(np.random.default_rng(0).exponential(1 / args.rate, n))
        return sim.Requests.plain(arr, np.full(n, 512), np.full(n, 256))

    load0 = os.getloadavg()
    req = requests(args.requests)
    w = time.perf_counter()
    sim.simulate(rep, req)
    first = time.perf_counter() - w
    walls, cpus = [], []
    for _ in range(args.runs):
        w, c = time.perf_counter(), time.process_time()
        run = sim.simulate(rep, req)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    s = sim.summarise([run])
    small = requests(args.peer)
    compiled = sim_kernel._compiled
    sim_kernel._compiled = sim_kernel.run_python
    w = time.perf_counter()
    sim.simulate(rep, small)
    peer = (time.perf_counter() - w) * args.requests / args.peer
    sim_kernel._compiled = compiled
    load1 = os.getloadavg()
    print(
        f"requests {args.requests:,} at {args.rate} req/s; iterations {run.iterations:,}; preemptions {run.total_preemptions}"
    )
    print(
        f"TTFT p50/p99 {s.ttft_ms['p50']:.1f}/{s.ttft_ms['p99']:.1f} ms; ITL p50/p99 {s.itl_ms['p50']:.2f}/{s.itl_ms['p99']:.2f} ms"
    )
    print(f"first call (compiles or loads the cache): {first:.2f} s")
    print(
        f"compiled: median wall {statistics.median(walls):.2f} s, CPU {statistics.median(cpus):.2f} s over {args.runs} runs"
    )
    print(
        f"plain Python peer: {peer:.1f} s scaled from {args.peer:,} requests (x{peer / statistics.median(walls):.0f})"
    )
    print(f"load average before {load0[0]:.1f}, after {load1[0]:.1f}")


if __name__ == "__main__":
    main()
