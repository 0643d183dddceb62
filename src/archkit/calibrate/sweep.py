"""`archkit calibrate`: measure each model stage's service time on a live Triton (loopback).

For every model stage of the spec served by Triton:
1. batch sweep: for each batch size, a few warm-up requests, then N requests one at a time (so
   each request is one execution and nothing queues); after each, Triton's own statistics are
   read, and the per-request deltas of compute input / infer / output and queue time (µs, from
   the server, not the client) give the service time's P50, P95 and mean;
2. concurrency sweep at batch 1: c client threads send back to back for a few seconds; the
   completed requests per second and the mean compute time per request give the measured
   scaling (instances sharing cores or a GPU do not add up: time-slicing is not free). 1 and 2
   in flight run in turns over `rounds` short windows, and the speed-up at 2 is the median of
   the rounds' paired ratios (`paired_speedup`): the model reads the machine's cores from it
   (`apply.effective_cores`), and one disturbed window must not set it.

Inputs: `--inputs DIR` with `DIR/MODEL/INPUT.npy` (one item, without the batch dimension; a
request of batch b repeats it b times) and, optionally, `DIR/MODEL/mix.json` naming several items
with weights (`{"items": [{"path": "mix/00", "weight": 4}, ...]}`, each a folder of INPUT.npy): the
batch sweep then cycles through them in the weights' proportions (`mix_order`), so its times are
those of the load's mix of shapes (bench/calibration_inputs.py writes the golden pages' shapes for
the detector); the concurrency sweep keeps the single item. Otherwise random tensors of the model's declared shapes with
each variable dimension set to `--dim`. Every run is bounded: a wall-clock budget and a request
timeout. The result is a calibration file that a spec's environment references
(`environments[].calibration`); the spec itself is never rewritten.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from archkit.calibrate.apply import CalibrationError
from archkit.calibrate.triton import Client, ModelConfig, TritonError, delta
from archkit.machine import cpu_model, load_average
from archkit.spec.model import Spec

KIND = "calibration"


@dataclass
class Options:
    triton: str = "http://127.0.0.1:8000"
    token: str | None = None
    env: str | None = None
    inputs: Path | None = None
    dim: int = 64  # a variable dimension of a random tensor
    requests: int = 20  # measured requests per batch size
    warmup: int = 3
    batch_sizes: list[int] | None = None  # default: the spec's service_time sizes, capped by Triton's max
    concurrency: list[int] | None = None  # default: 1 .. instances + 1
    seconds: float = 4.0  # per concurrency point (the paired points 1 and 2: over all their rounds)
    rounds: int = 5  # 1 and 2 in flight in turns, this many windows each (`paired_speedup`)
    budget_s: float = 600.0  # the whole run
    seed: int = 1
    models: list[str] = field(default_factory=list)  # only these model names (default: every one)
    service: str | None = None  # the service's base URL, asked for its runtime (default: the spec's target)
    stage_root: Path | None = (
        None  # where the scenario payloads are; None: the service's stages are not measured
    )


def _pcts(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    return {
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p95": round(float(np.percentile(arr, 95)), 3),
        "mean": round(float(arr.mean()), 3),
    }


def model_stages(spec: Spec, only: list[str]) -> list[tuple[str, str]]:
    """(stage id, model name) of every model stage served by Triton."""
    out = []
    for st in spec.dataflow.stages:
        m = st.model
        if m is None or (getattr(m, "server", None) not in (None, "triton")):
            continue
        if only and m.name not in only:
            continue
        out.append((st.id, m.name))
    return out


def _item(cfg: ModelConfig, opts: Options, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One item per input: from --inputs, else random of the declared shape."""
    if opts.inputs is not None:
        return _load_item(cfg, opts.inputs / cfg.name)
    item = {}
    for info in cfg.inputs:
        shape = [opts.dim if d < 0 else d for d in info.dims]
        if np.issubdtype(info.dtype, np.integer):
            arr = rng.integers(0, 255 if info.dtype == np.uint8 else 100, size=shape).astype(info.dtype)
        else:
            arr = rng.random(size=shape).astype(info.dtype)
        item[info.name] = arr
    return item


def _load_item(cfg: ModelConfig, folder: Path) -> dict[str, np.ndarray]:
    item = {}
    for info in cfg.inputs:
        path = folder / f"{info.name}.npy"
        if not path.is_file():
            raise CalibrationError(
                f"{path}: missing (calibrate --inputs expects DIR/MODEL/INPUT.npy per input)"
            )
        item[info.name] = np.load(path, allow_pickle=False)
    return item


def _mix(cfg: ModelConfig, opts: Options) -> tuple[list[dict[str, np.ndarray]], list[float]] | None:
    """The weighted items of `--inputs DIR/MODEL/mix.json` (None without one)."""
    if opts.inputs is None or not (opts.inputs / cfg.name / "mix.json").is_file():
        return None
    path = opts.inputs / cfg.name / "mix.json"
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["items"]
        pairs = [(str(e["path"]), float(e["weight"])) for e in entries]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CalibrationError(f"{path}: not a mix (items: [{{path, weight}}]): {exc}") from None
    if not pairs or any(w <= 0 or "/.." in "/" + rel for rel, w in pairs):
        raise CalibrationError(f"{path}: a mix needs items with positive weights inside {path.parent}")
    return [_load_item(cfg, path.parent / rel) for rel, _ in pairs], [w for _, w in pairs]


def mix_order(weights: list[float], n: int, rng: np.random.Generator) -> list[int]:
    """n item indices in the weights' proportions, shuffled: request k of a stratified sample.

    Request k takes the item whose share (lo, hi] of the cumulative weight holds the quantile
    (k + 0.5) / n, so every item gets its weight's share of the n requests to within one (weights
    3 and 1 over 8 requests: 6 and 2), and the order is shuffled so that no item runs in a block
    (the load test draws its pages at random)."""
    total = float(sum(weights))
    edges = np.cumsum(np.asarray(weights, dtype=float)) / total
    picks = [min(int(np.searchsorted(edges, (k + 0.5) / n, side="left")), len(weights) - 1) for k in range(n)]
    return [picks[i] for i in rng.permutation(n)]


def _batch(cfg: ModelConfig, item: dict[str, np.ndarray], b: int) -> dict[str, np.ndarray]:
    if cfg.max_batch_size <= 0:
        return item
    return {k: np.repeat(v[None, ...], b, axis=0) for k, v in item.items()}


def _ms(part: tuple[int, int]) -> float:
    count, ns = part
    return ns / count / 1e6 if count else 0.0


def batch_point(
    client: Client, cfg: ModelConfig, reqs: list[dict[str, np.ndarray]], opts: Options, end: float
) -> dict:
    """Sequential requests of one batch size, `reqs` in turn (one item repeated, or a mix's
    `mix_order`; the warm-up takes the first): per-request server-side times from the statistics."""
    for i in range(opts.warmup):
        client.infer(cfg.name, reqs[i % len(reqs)], cfg.inputs, cfg.outputs)
    samples: dict[str, list[float]] = {
        "service": [],
        "compute_input": [],
        "compute_infer": [],
        "compute_output": [],
        "queue": [],
    }
    before = client.stats(cfg.name)
    for req in reqs:
        if time.monotonic() > end:
            break
        client.infer(cfg.name, req, cfg.inputs, cfg.outputs)
        after = client.stats(cfg.name)
        d = delta(before, after)
        before = after
        parts = {k: _ms(d[k]) for k in ("compute_input", "compute_infer", "compute_output", "queue")}
        for k, v in parts.items():
            samples[k].append(v)
        samples["service"].append(parts["compute_input"] + parts["compute_infer"] + parts["compute_output"])
    if not samples["service"]:
        raise CalibrationError(f"model {cfg.name}: out of time before any measured request (--budget-s)")
    return {
        "requests": len(samples["service"]),
        "service_ms": _pcts(samples["service"]),
        "compute_input_ms": _pcts(samples["compute_input"]),
        "compute_infer_ms": _pcts(samples["compute_infer"]),
        "compute_output_ms": _pcts(samples["compute_output"]),
        "queue_ms": _pcts(samples["queue"]),
    }


def concurrency_point(
    opts: Options, cfg: ModelConfig, req: dict[str, np.ndarray], c: int, seconds: float
) -> dict:
    """c threads back to back for `seconds`: throughput and mean compute per request (server side)."""
    stop = threading.Event()
    errors: list[str] = []

    def worker() -> None:
        cl = Client(opts.triton, opts.token)
        try:
            while not stop.is_set():
                cl.infer(cfg.name, req, cfg.inputs, cfg.outputs)
        except TritonError as exc:
            errors.append(str(exc))
        finally:
            cl.close()

    probe = Client(opts.triton, opts.token)
    try:
        threads = [threading.Thread(target=worker, daemon=True) for _ in range(c)]
        for t in threads:
            t.start()
        time.sleep(min(1.0, seconds / 4))  # every thread busy before the window opens
        before, t0 = probe.stats(cfg.name), time.monotonic()
        time.sleep(seconds)
        after, t1 = probe.stats(cfg.name), time.monotonic()
        stop.set()
        for t in threads:
            t.join(timeout=opts.seconds + 60)
    finally:
        probe.close()
    if errors:
        raise CalibrationError(f"model {cfg.name} at concurrency {c}: {errors[0]}")
    d = delta(before, after)
    done = d["success"][0]
    compute = sum(_ms(d[k]) for k in ("compute_input", "compute_infer", "compute_output"))
    return {
        "concurrency": c,
        "throughput_rps": round(done / (t1 - t0), 3),
        "compute_ms_mean": round(compute, 3),
        "queue_ms_mean": round(_ms(d["queue"]), 3),
        "requests": done,
    }


SPREAD = 0.15  # the rounds' middle three ratios may differ by this share of their median
DISTURBED_P95 = 1.8  # a batch-1 P95 over this multiple of its P50: the host was busy


def paired_speedup(one: list[float], two: list[float]) -> dict[str, Any]:
    """The speed-up at 2 in flight from rounds of 1 and 2 in flight in turns (req/s each).

    Each round's ratio compares two windows seconds apart, so a load that drifts over the sweep
    moves both alike and cancels in it, and the median of the rounds' ratios is one that a single
    disturbed window cannot set (tests/calibrate/test_live_perf_analyzer.py pairs its runs the same
    way). `spread`: the middle ratios' range (the rounds without their highest and lowest, for
    four or more) over the median; above SPREAD the rounds disagree and the reading is uncertain."""
    ratios = [round(b / a, 4) for a, b in zip(one, two, strict=True) if a > 0]
    if not ratios:
        return {"ratios": [], "speedup": None, "spread": None}
    median = float(np.median(ratios))
    middle = sorted(ratios)[1:-1] if len(ratios) >= 4 else sorted(ratios)
    spread = (middle[-1] - middle[0]) / median if median > 0 else None
    return {
        "ratios": ratios,
        "speedup": round(median, 3),
        "spread": None if spread is None else round(spread, 3),
    }


def host_warnings(name: str, entry: dict) -> list[str]:
    """One line each when a model's readings show a disturbed host: its paired rounds disagree
    by more than SPREAD, or its batch-1 P95 is more than DISTURBED_P95 times its P50 (one item,
    one request at a time, on an idle machine varies far less; a mix's spread is its items',
    so a model timed on a mix is not judged by it)."""
    out = []
    rounds = entry.get("rounds") or {}
    if isinstance(rounds.get("spread"), float | int) and rounds["spread"] > SPREAD:
        out.append(
            f"{name}: the 1-vs-2-in-flight rounds disagree (ratios {', '.join(map(str, rounds['ratios']))}: "
            f"middle spread {rounds['spread']:.0%} > {SPREAD:.0%} of the median {rounds['speedup']}); "
            "the cores reading is uncertain: calibrate again on a quiet machine"
        )
    b1 = (
        None
        if "mix" in entry
        else next((b for b in entry.get("batches", []) if b.get("batch_size") == 1), None)
    )
    if (
        b1
        and b1["service_ms"]["p50"] > 0
        and b1["service_ms"]["p95"] > DISTURBED_P95 * b1["service_ms"]["p50"]
    ):
        s = b1["service_ms"]
        out.append(
            f"{name}: batch 1 P95 {s['p95']} ms is {s['p95'] / s['p50']:.1f}x its P50 {s['p50']} ms "
            f"(> {DISTURBED_P95}x): the host looks disturbed; calibrate again on a quiet machine"
        )
    return out


def concurrency_sweep(
    opts: Options,
    cfg: ModelConfig,
    req: dict[str, np.ndarray],
    levels: list[int],
    end: float,
    say: Callable[[str], None],
) -> tuple[list[dict], dict | None]:
    """The concurrency points of one model and, when 1 and 2 are among the levels, their rounds.

    1 and 2 in flight run in turns, `opts.rounds` windows each of `opts.seconds / opts.rounds`
    (the same time in all as one point each of `opts.seconds`); their points are the rounds'
    totals, and the point at 2 carries the median paired ratio as its speed-up. Every other level
    is one point of `opts.seconds`, its speed-up against the rounds' total at 1."""
    points: dict[int, dict] = {}
    rounds = None
    paired = [c for c in (1, 2) if c in levels] if opts.rounds > 0 else []
    if len(paired) == 2:
        window = max(0.5, opts.seconds / opts.rounds)
        got: dict[int, list[dict]] = {1: [], 2: []}
        for r in range(opts.rounds):
            if time.monotonic() + 2 * (window + 1) > end:
                say(f"{cfg.name}: rounds {r + 1}.. skipped (--budget-s)")
                break
            for c in (1, 2):
                got[c].append(concurrency_point(opts, cfg, req, c, window))
        if got[1]:
            rounds = paired_speedup(
                [p["throughput_rps"] for p in got[1]], [p["throughput_rps"] for p in got[2]]
            )
            rounds.update(rounds=len(got[1]), window_s=window)
            for c in (1, 2):
                points[c] = _total(c, got[c])
            say(
                f"{cfg.name}: 1 vs 2 in flight over {len(got[1])} rounds: ratios {rounds['ratios']}, median {rounds['speedup']}"
            )
    base = points[1]["throughput_rps"] if 1 in points else None
    for c in levels:
        if c in points:
            continue
        if time.monotonic() + opts.seconds + 2 > end:
            say(f"{cfg.name}: concurrency {c} skipped (--budget-s)")
            break
        say(f"{cfg.name}: concurrency {c} for {opts.seconds:g} s")
        points[c] = concurrency_point(opts, cfg, req, c, opts.seconds)
        base = base or points[c]["throughput_rps"] or None
    for c, point in points.items():
        if c == 2 and rounds is not None:
            point["speedup"] = rounds["speedup"]
        else:
            point["speedup"] = round(point["throughput_rps"] / base, 3) if base else None
    return [points[c] for c in levels if c in points], rounds


def _total(c: int, windows: list[dict]) -> dict:
    """The rounds' windows at one level as one point: requests over the windows' time."""
    done = sum(p["requests"] for p in windows)
    secs = sum(p["requests"] / p["throughput_rps"] for p in windows if p["throughput_rps"] > 0)

    def mean(key: str) -> float:  # per request: each window's mean weighted by its requests
        return round(sum(p[key] * p["requests"] for p in windows) / done, 3) if done else 0.0

    return {
        "concurrency": c,
        "throughput_rps": round(done / secs, 3) if secs else 0.0,
        "compute_ms_mean": mean("compute_ms_mean"),
        "queue_ms_mean": mean("queue_ms_mean"),
        "requests": done,
    }


def environment() -> dict:
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_average": load_average(),
        "measured_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _fingerprint(spec: Spec, triton: str, service: str | None) -> dict:
    """This machine's fingerprint with the serving runtime the target reports and Triton's version."""
    from archkit.calibrate.origin import service_runtime, triton_version
    from archkit.machine import fingerprint

    version = triton_version(triton)
    return fingerprint(service_runtime(spec, service), {"triton": version} if version else None)


def order_stat(values: list[float], p: float) -> float:
    """The nearest-rank P-th percentile (an order statistic of the sample; p in (0, 1])."""
    srt = sorted(values)
    return srt[min(len(srt) - 1, max(0, int(np.ceil(p * len(srt))) - 1))]


def robust_stage(samples: list[float]) -> dict[str, float]:
    """One stage's per-request times (ms) as calibration statistics that one slow request cannot move.

    P50 and P95 are order statistics: among 30 requests one 50x outlier is the largest and moves
    neither (it moves the mean by 1.6x and the P99, the maximum of 30 draws, all the way), so the
    model takes the median as `cpu_ms` and its spread from P50 -> P95 (`spread_p99_ms`). The mean
    and P99 are recorded for comparison only.
    """
    arr = np.asarray(samples, dtype=float)
    return {
        "p50_ms": round(order_stat(samples, 0.50), 4),
        "p95_ms": round(order_stat(samples, 0.95), 4),
        "p99_ms": round(order_stat(samples, 0.99), 4),
        "mean_ms": round(float(arr.mean()), 4),
    }


def _scenario_files(spec: Spec, root: Path) -> tuple[Any, list[Path]]:
    """The spec's first scenario with a file payload and its files (None, [] without one)."""
    lt = spec.loadtest
    sc = next(
        (s for s in (lt.scenarios if lt else []) if s.payload and (s.payload.file or s.payload.folder)), None
    )
    if sc is None or sc.payload is None:
        return None, []
    files = (
        [root / sc.payload.file]
        if sc.payload.file
        else sorted(p for p in (root / str(sc.payload.folder)).glob(sc.payload.glob) if p.is_file())
    )
    return sc, files


def stage_point(spec: Spec, service: str, requests: int, root: Path, warmup: int = 3) -> dict[str, dict]:
    """Each non-model stage's time from the service's own histograms, request by request.

    `warmup` requests first, discarded (the first requests after a restart or a test suite pay for
    cold caches and lazily built objects), then `requests` sequential requests through the spec's
    first scenario with a file payload (its headers, e.g. a cache bypass), so a CPU-bound stage's
    wall time is its processor time. The histograms are read before and after each request: the
    exact sum / count of that request's observations is one sample (the histogram's own
    percentiles are only bucket-interpolated), and the samples give `robust_stage`'s statistics.
    An ingress or gateway stage gets what its whole-request histogram does not see, per request:
    the client's round trip minus the handler's time. {} when the service exposes no stage
    histograms or the spec has no such scenario.
    """
    import itertools

    from archkit.calibrate.apply import stage_calibratable
    from archkit.endpoints import open_url
    from archkit.loadtest import scrape
    from archkit.loadtest.safety import require_loopback

    require_loopback(service, "service")
    sc, files = _scenario_files(spec, root)
    if sc is None or not files:
        return {}
    urls = scrape.endpoints(spec, service)
    target = service.rstrip("/") + (sc.path or "/")
    headers = {**sc.headers, "Content-Type": sc.payload.content_type or "application/octet-stream"}
    samples: dict[str, list[float]] = {}
    metric: dict[str, str] = {}
    for k, path in enumerate(itertools.islice(itertools.cycle(files), warmup + requests)):
        body = path.read_bytes()
        before = scrape.snapshot(urls)
        t0 = time.perf_counter()
        # the endpoint policy's opener: the judged loopback address, no redirect off it, no proxy
        with open_url(target, (), timeout=60, headers=headers, data=body, method=sc.method) as resp:
            resp.read()
        client_ms = (time.perf_counter() - t0) * 1000
        if k < warmup:
            continue
        got = scrape.decompose(spec, before, scrape.snapshot(urls), {}).get("stages", {})
        for sid, one in got.items():
            st = spec.stage(sid)
            if st is None or one.get("mean_ms") is None:
                continue
            if stage_calibratable(st):
                samples.setdefault(sid, []).append(float(one["mean_ms"]))
            elif st.kind.value in ("ingress", "gateway"):
                # what the whole-request histogram does not see: the HTTP exchange around the handler
                # (parsing, the body, the response, the loopback hop), on the same cores as the rest
                samples.setdefault(sid, []).append(max(0.0, client_ms - float(one["mean_ms"])))
                metric[sid] = f"client round trip - {one.get('metric')}"
                continue
            metric.setdefault(sid, str(one.get("metric")))
    out: dict[str, dict] = {}
    for sid, values in samples.items():
        out[sid] = {**robust_stage(values), "count": len(values), "warmup": warmup, "metric": metric[sid]}
        if metric[sid].startswith("client round trip"):
            out[sid]["outside"] = True
    return out


def calibrate(spec: Spec, opts: Options, progress: Callable[[str], None] | None = None) -> dict:
    """Sweep every model stage; returns the calibration document (see module docstring)."""
    say = progress or (lambda _m: None)
    stages = model_stages(spec, opts.models)
    if not stages:
        raise CalibrationError("the spec has no model stage served by Triton (dataflow.stages[].model)")
    end = time.monotonic() + opts.budget_s
    rng = np.random.default_rng(opts.seed)
    client = Client(opts.triton, opts.token)
    warnings: list[str] = []
    doc: dict[str, Any] = {
        "apiVersion": "archkit/v1",
        "kind": KIND,
        "spec": spec.metadata.name,
        "env": opts.env,
        "triton": opts.triton,
        "environment": environment(),
        "fingerprint": _fingerprint(spec, opts.triton, opts.service),
        "method": (
            f"{opts.requests} sequential requests per batch size after {opts.warmup} warm-up; per-request "
            "deltas of Triton's inference statistics (compute input + infer + output = service time); "
            f"concurrency points of {opts.seconds:g} s each at batch 1, 1 and 2 in flight in turns over "
            f"{opts.rounds} rounds (the speed-up at 2 is the rounds' median paired ratio); a model with a "
            "mix of inputs (mix.json) cycles through them in their weights' proportions; service stages: per-request deltas "
            "of the service's stage histograms after the same warm-up, their median as cpu_ms and "
            "the P50 -> P95 spread"
        ),
        "models": {},
    }
    try:
        for stage_id, name in stages:
            try:
                cfg = client.config(name)
            except TritonError as exc:
                raise CalibrationError(f"stage {stage_id}: model {name}: {exc}") from None
            item = _item(cfg, opts, rng)
            mix = _mix(cfg, opts)
            st = spec.stage(stage_id)
            declared = (
                sorted({t.batch_size for t in (st.model.service_time or [])}) if st and st.model else []
            )
            cap = cfg.max_batch_size if cfg.max_batch_size > 0 else 1
            sizes = [b for b in (opts.batch_sizes or declared or [1]) if b <= cap] or [1]
            entry: dict[str, Any] = {
                "stage": stage_id,
                "instances": cfg.instances,
                "batches": [],
                "concurrency": [],
            }
            if mix is not None:  # every item at least once: the mix is the load's, not a sample of it
                order = mix_order(mix[1], max(opts.requests, len(mix[0])), np.random.default_rng(opts.seed))
                entry["mix"] = {"items": len(mix[0]), "weights": mix[1], "order": order}
                say(f"{name}: a mix of {len(mix[0])} items, weights {mix[1]}")
            for b in sizes:
                if mix is not None:
                    batched = [_batch(cfg, one, b) for one in mix[0]]
                    reqs = [batched[i] for i in order]
                else:
                    reqs = [_batch(cfg, item, b)] * opts.requests
                say(f"{name}: batch {b}, {len(reqs)} requests")
                point = batch_point(client, cfg, reqs, opts, end)
                entry["batches"].append({"batch_size": b, **point})
                say(
                    f"{name}: batch {b}: service P50 {point['service_ms']['p50']} ms, P95 {point['service_ms']['p95']} ms"
                )
            levels = opts.concurrency or list(range(1, cfg.instances + 2))
            entry["concurrency"], rounds = concurrency_sweep(
                opts, cfg, _batch(cfg, item, 1), levels, end, say
            )
            if rounds is not None:
                entry["rounds"] = rounds
            for point in entry["concurrency"]:
                say(
                    f"{name}: concurrency {point['concurrency']}: {point['throughput_rps']} req/s "
                    f"(x{point['speedup']}), compute {point['compute_ms_mean']} ms"
                )
            warnings += host_warnings(name, entry)
            doc["models"][name] = entry
    finally:
        client.close()
    doc["warnings"] = warnings  # `archkit calibrate` prints each as one line
    service = opts.service or (spec.loadtest.target.host if spec.loadtest else None)
    if service and opts.stage_root is not None:
        say(f"service stages: {opts.requests} sequential requests through {service}")
        try:
            doc["stages"] = stage_point(spec, service, opts.requests, opts.stage_root, opts.warmup)
        except OSError as exc:  # the service is optional: the models are calibrated without it
            say(f"service stages not measured: {exc}")
        for sid, got in (doc.get("stages") or {}).items():
            say(
                f"stage {sid}: P50 {got['p50_ms']} ms, P95 {got['p95_ms']} ms, mean {got['mean_ms']} ms "
                f"over {got['count']} requests after {got['warmup']} warm-up ({got['metric']})"
            )
    return doc
