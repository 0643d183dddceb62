"""Fault-tree analysis and rule generation timings; medians, CPU and wall time.

Run: .venv/bin/python bench/bench_faulttree.py --runs 7
     .venv/bin/python bench/bench_faulttree.py --aralia [--scram] [--timeout 120] [--max-nodes N] [TREE ...]
     .venv/bin/python bench/bench_faulttree.py --orders [--budget 3000000] TREE ...

`--aralia`: every tree of tests/faulttree/faulttrees (the Aralia set, Baobab1/2, 200_event),
each in a fresh process (its own peak RSS): the probability alone (BDD + importance), and
for Baobab1/2 and 200_event the cut sets too; with `--scram`, SCRAM (Debian `scram`) on the
same file in the same run, as the peer (`-l 2`: probability only, its BDD). Prints a Markdown
table for docs/benchmarks.md and checks each probability against scram-reference.json.

`--orders`: for each Aralia tree named, the BDD nodes each of `ft_model.order_candidates`
creates (forced in turn, each in a fresh process, probability only, at most `--budget` nodes
per diagram) and the candidate `choose_order` picks.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from archkit import api
from archkit.faulttree import analyse, minimal_cut_sets
from archkit.spec.model import BasicEvent, FaultTree, Gate


def run_killable(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """`subprocess.run` whose timeout kills the whole process group: SCRAM runs under
    /usr/bin/time, and killing only `time` left a SCRAM of 12 GB running into the next rows."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


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


FT = ROOT / "tests/faulttree/faulttrees"
MODELS = {
    "Baobab1": (["scram/baobab1.xml", "scram/baobab1-basic-events.xml"], None),
    "Baobab2": (["scram/baobab2.xml", "scram/baobab2-basic-events.xml"], None),
    "200_event-l15": (["scram/200_event.xml"], 15),
    "200_event": (["scram/200_event.xml"], 20),
}


def worker(files: list[str], order: int | None, cut_sets: bool, max_nodes: int) -> None:
    """One analysis in this process; prints JSON with its figures and peak memory."""
    import json

    from archkit.interchange.mef import import_mef

    tree = import_mef([(f, Path(f).read_bytes()) for f in files])[0]
    tree.limits.max_cut_sets = 2_000_000
    # the budgets the recorded figures were measured with (above the defaults since issue 28)
    tree.limits.max_bdd_nodes = max_nodes or 16_000_000
    tree.limits.max_zbdd_nodes = 4_000_000
    t0 = time.perf_counter()
    try:
        a = analyse(tree, order=order, cut_sets=cut_sets)
        out = {
            "p": a.probability,
            "count": a.cut_set_count if cut_sets else None,
            "nodes": a.bdd_nodes,
            "modules": a.modules,
            "parts": a.seconds,
        }
    except Exception as exc:  # a limit: reported in the table
        out = {"error": str(exc)[:120]}
    out["seconds"] = time.perf_counter() - t0
    out["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def order_worker(path: str, index: int, budget: int) -> None:
    """Build candidate `index` of one tree's variable orders; print its nodes (or 'over')."""
    import json

    from archkit.faulttree.bdd import DiagramLimitError
    from archkit.faulttree.engine import Engine
    from archkit.faulttree.model import compile_tree, order_candidates
    from archkit.interchange.mef import import_mef

    tree = import_mef([(path, Path(path).read_bytes())])[0]
    _name, form, order = order_candidates(compile_tree(tree))[index]
    t0 = time.perf_counter()
    try:
        nodes: int | None = Engine(form, order, budget).node_count
    except DiagramLimitError:
        nodes = None
    print(json.dumps({"nodes": nodes, "seconds": time.perf_counter() - t0}))


def orders(names: list[str], budget: int, timeout: float) -> None:
    import json

    from archkit.faulttree.model import choose_order, compile_tree, order_candidates
    from archkit.interchange.mef import import_mef

    print(f"load average {os.getloadavg()[0]:.1f} at start; budget {budget:,} nodes per diagram")
    header = None
    for name in names:
        path = FT / "aralia" / f"{name}.xml"
        f = compile_tree(import_mef([(str(path), path.read_bytes())])[0])
        cands = [c[0] for c in order_candidates(f)]
        if header is None:
            header = cands
            print("| tree | " + " | ".join(cands) + " | picked |")
            print("|---|" + "---:|" * len(cands) + "---|")
        cells = []
        for i in range(len(cands)):
            cmd = [sys.executable, __file__, "--order-worker", str(path), str(i), str(budget)]
            try:
                proc = run_killable(cmd, timeout)
                nodes = json.loads(proc.stdout.strip().splitlines()[-1])["nodes"]
            except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
                nodes = None
            cells.append(f"{nodes:,}" if nodes is not None else "over")
        print(f"| {name} | " + " | ".join(cells) + f" | {choose_order(f)[2]} |", flush=True)


def aralia(names: list[str], timeout: float, scram: bool, max_nodes: int) -> None:
    import json
    import shutil

    ref = json.loads((FT / "scram-reference.json").read_text())["trees"]
    todo: list[tuple[str, list[str], int | None, bool]] = []
    for p in sorted((FT / "aralia").glob("*.xml")):
        todo.append((p.stem, [str(p)], None, False))
    for name, (files, order) in MODELS.items():
        todo.append((name, [str(FT / f) for f in files], order, True))
    if names:
        todo = [t for t in todo if t[0] in names]
    have_scram = scram and shutil.which("scram") is not None
    print(
        f"load average {os.getloadavg()[0]:.1f} at start; {os.cpu_count()} cores; Python {platform.python_version()}"
    )
    print(
        "| tree | P (archkit) | SCRAM's P | archkit s | archkit MiB | cut sets | SCRAM s | SCRAM MiB | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, files, order, cuts in todo:
        cmd = [sys.executable, __file__, "--worker", *files, "--order", str(order or 0)] + (
            ["--cut-sets"] if cuts else []
        )
        cmd += ["--max-nodes", str(max_nodes)]
        try:
            proc = run_killable(cmd, timeout)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            res = {"error": f"over {timeout:g} s", "seconds": timeout, "rss_mib": float("nan")}
        except (IndexError, json.JSONDecodeError):
            res = {"error": "crashed", "seconds": float("nan"), "rss_mib": float("nan")}
        sc_s = sc_m = float("nan")
        if have_scram:
            with tempfile.TemporaryDirectory() as tmp:
                # cut-set rows: the same order limit (SCRAM's default is 20); probability rows: -l 2
                limit = ["-l", str(order)] if order else [] if cuts else ["-l", "2"]
                t0 = time.perf_counter()
                try:
                    sp = run_killable(
                        [
                            "/usr/bin/time",
                            "-f",
                            "%M",
                            "scram",
                            "--probability",
                            "true",
                            *limit,
                            *files,
                            "-o",
                            f"{tmp}/r.xml",
                        ],
                        timeout,
                    )
                    sc_s = time.perf_counter() - t0
                    sc_m = int(sp.stderr.strip().splitlines()[-1]) / 1024
                except (subprocess.TimeoutExpired, ValueError, IndexError):
                    sc_s = float("inf")
        want = ref.get(name, {}).get("probability")
        p = res.get("p")
        ptxt = f"{p:.7g}" if p is not None else res.get("error", "?")
        ratio = (
            res["seconds"] / sc_s
            if sc_s == sc_s and sc_s not in (0, float("inf")) and "error" not in res
            else float("nan")
        )
        cnt = res.get("count")
        print(
            f"| {name} | {ptxt} | {want if want is not None else '—'} | {res['seconds']:.2f} | {res['rss_mib']:.0f} | "
            f"{cnt if cnt is not None else ''} | {sc_s:.2f} | {sc_m:.0f} | {ratio:.1f} |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--aralia", action="store_true")
    ap.add_argument("--scram", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--worker", nargs="+")
    ap.add_argument("--order", type=int, default=0)
    ap.add_argument("--cut-sets", action="store_true")
    ap.add_argument("--orders", action="store_true")
    ap.add_argument("--budget", type=int, default=3_000_000)
    ap.add_argument(
        "--max-nodes", type=int, default=0, help="the trees' limits.max_bdd_nodes (0: 16,000,000)"
    )
    ap.add_argument("--order-worker", nargs=3)
    ap.add_argument("trees", nargs="*")
    args = ap.parse_args()
    if args.order_worker:
        path, index, budget = args.order_worker
        order_worker(path, int(index), int(budget))
        return
    if args.orders:
        orders(args.trees, args.budget, args.timeout)
        return
    if args.worker:
        worker(args.worker, args.order or None, args.cut_sets, args.max_nodes)
        return
    if args.aralia:
        aralia(args.trees, args.timeout, args.scram, args.max_nodes)
        return
    rows = []
    three = api.load(ROOT / "tests/faulttree/faulttrees/three-motor.yaml").spec.faulttrees[0]
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
