"""Fault-tree analysis and rule generation timings (issue 5); medians, CPU and wall time.

Run: .venv/bin/python bench/bench_faulttree.py --runs 7
"""

from __future__ import annotations

import argparse
import itertools
import math
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
sys.path.insert(0, str(ROOT / "src"))

from archkit import api
from archkit.analysis.faulttree import analyse, minimal_cut_sets
from archkit.spec.model import BasicEvent, FaultTree, Gate


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def timed(fn, runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        c0, w0 = cpu(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(cpu() - c0)
    return statistics.median(cpus) * 1000, statistics.median(walls) * 1000


def voting_tree(trains: int) -> FaultTree:
    """`trains` 2-out-of-3 voting groups under an OR, each group sharing one support event."""
    gates = [Gate(id="top", type="or", inputs=[f"v{i}" for i in range(trains)])]
    events = []
    for i in range(trains):
        gates.append(Gate(id=f"v{i}", type="atleast", k=2, inputs=[f"a{i}", f"b{i}", f"c{i}"]))
        for x in "abc":
            gates.append(Gate(id=f"{x}{i}", type="or", inputs=[f"{x}{i}.hw", f"s{i}"]))
            events.append(BasicEvent(id=f"{x}{i}.hw", probability=0.01))
        events.append(BasicEvent(id=f"s{i}", probability=0.001))
    return FaultTree(id="vote", top="top", gates=gates, events=events)


def enumerate_probability(tree: FaultTree) -> float:
    cs = minimal_cut_sets(tree)
    ev = [e.id for e in tree.events]
    p = {e.id: e.probability for e in tree.events}
    total = 0.0
    for bits in itertools.product((0, 1), repeat=len(ev)):
        failed = {e for e, b in zip(ev, bits, strict=False) if b}
        if any(c <= failed for c in cs):
            total += math.prod(p[e] if e in failed else 1 - p[e] for e in ev)
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    rows = []
    three = api.load(ROOT / "tests/analysis/faulttrees/three-motor.yaml").spec.faulttrees[0]
    rows.append(
        (
            "Three Motor (18 events, 54 cut sets): cut sets + exact P + importance",
            *timed(lambda: analyse(three), args.runs),
        )
    )
    big = voting_tree(40)
    n_cs = len(minimal_cut_sets(big))
    rows.append(
        (
            f"40 voting groups (160 events, {n_cs} cut sets): full analysis",
            *timed(lambda: analyse(big), args.runs),
        )
    )
    small = voting_tree(4)
    rows.append(("4 voting groups (16 events): exact P by BDD", *timed(lambda: analyse(small), args.runs)))
    rows.append(
        (
            "4 voting groups (16 events): exact P by enumerating 2^16 states",
            *timed(lambda: enumerate_probability(small), max(1, args.runs // 3)),
        )
    )
    assert math.isclose(analyse(small).probability, enumerate_probability(small), rel_tol=1e-12)
    for ex in sorted((ROOT / "examples").glob("*.yaml")):
        spec = api.load(ex).spec
        rows.append(
            (
                f"generate runbooks + prometheus: {ex.stem}",
                *timed(
                    lambda s=spec, n=ex.name: api.generate(s, n, only=["runbooks", "prometheus"]), args.runs
                ),
            )
        )
        with tempfile.TemporaryDirectory() as tmp:
            files, _ = api.generate(spec, ex.name, only=["prometheus"])
            for rel, text in files.items():
                (Path(tmp) / Path(rel).name).write_text(text)
            n_tests = files["prometheus/rules.test.yaml"].count("\n- name: ")
            rows.append(
                (
                    f"promtool test rules ({n_tests} tests): {ex.stem}",
                    *timed(
                        lambda: subprocess.run(
                            ["promtool", "test", "rules", "rules.test.yaml"],
                            cwd=tmp,
                            check=True,
                            capture_output=True,
                        ),
                        max(1, args.runs // 2),
                    ),
                )
            )
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    print("| what | CPU median ms | wall median ms |\n|---|---:|---:|")
    for what, c, w in rows:
        print(f"| {what} | {c:.1f} | {w:.1f} |")


if __name__ == "__main__":
    main()
