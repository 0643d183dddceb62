"""Server-side timing from metrics endpoints, read before and after a run: the latency decomposition.

Seed 000 §2.1: network, queue and compute must be measured apart ("three numbers subtracted
give the real model time"). The inference engine's cumulative per-model duration counters (named
by its adapter, `archkit.engines`) split server time into queue and compute per model; a gateway's stage histograms
(`observability.stages[].latency`) give each stage; client-observed minus server-side is the
network and serialisation share.
"""

from __future__ import annotations

import math
import os
import re

from archkit import engines
from archkit.endpoints import EndpointError, open_url
from archkit.loadtest.safety import require_loopback
from archkit.orderstats import interval
from archkit.spec.model import MetricRef, MetricType, Spec

Sample = tuple[str, tuple[tuple[str, str], ...], float]

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

# The engine whose per-model counters decompose server time (a Triton load-test target).
ENGINE = engines.adapter("triton")
_PART_MEASURES = {  # measure (a cumulative µs counter) -> part of the server time
    "queue_duration": "queue_ms",
    "compute_input_duration": "compute_input_ms",
    "compute_infer_duration": "compute_infer_ms",
    "compute_output_duration": "compute_output_ms",
    "request_duration": "request_ms",
}
ENGINE_PARTS = {ENGINE.metric(measure).name: part for measure, part in _PART_MEASURES.items()}
ENGINE_REQUESTS = ENGINE.metric("request_success").name  # per-model successful requests
# Per-model items inferred (batch elements: a request of 2 line crops counts 2): with a stage's own
# visit count, the items a visit really sends, which the spec declares as `items_per_request`.
ENGINE_ITEMS = ENGINE.metric("inference_count").name
# How reports name the part counters: their shared prefix and suffix around a `*`
# ("<prefix>_*_duration_us"), and their family (the prefix alone).
_PREFIX = os.path.commonprefix(list(ENGINE_PARTS))
_SUFFIX = os.path.commonprefix([n[::-1] for n in ENGINE_PARTS])[::-1]
ENGINE_PARTS_GLOB = f"{_PREFIX}*{_SUFFIX}"
ENGINE_FAMILY = _PREFIX.rstrip("_")


def parse(text: str) -> list[Sample]:
    """Samples of a Prometheus text exposition (comments skipped, labels sorted)."""
    out: list[Sample] = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        labels = tuple(
            sorted((k, v.encode().decode("unicode_escape")) for k, v in _LABEL.findall(m.group(3) or ""))
        )
        try:
            out.append((m.group(1), labels, float(m.group(4))))
        except ValueError:
            continue
    return out


def fetch(url: str, timeout: float = 3.0) -> list[Sample] | None:
    """Scrape one endpoint (loopback only); None when it does not answer."""
    require_loopback(url, "metrics endpoint")
    try:  # the endpoint policy's opener: no redirect off loopback, no proxy from the environment
        with open_url(url, (), timeout=timeout) as resp:
            return parse(resp.read().decode("utf-8", "replace"))
    except (OSError, EndpointError):
        return None


def endpoints(spec: Spec, host_url: str, extra: list[str] = ()) -> list[str]:
    """Metrics URLs: `observability.scrape` entries on the target's host, plus any given."""
    from urllib.parse import urlsplit

    from archkit.loadtest.safety import host_of

    host = host_of(host_url) or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    # With --host on another port, the target service's own endpoint moves with it.
    lt = spec.loadtest
    spec_port = urlsplit(lt.target.host).port if lt else None
    run_port = urlsplit(host_url if "://" in host_url else "//" + host_url).port
    urls = []
    for s in spec.observability.scrape:
        port = s.port
        if lt and s.service == lt.target.service and s.port == spec_port and run_port:
            port = run_port
        urls.append(f"http://{host}:{port}{s.path}")
    urls += list(extra)
    return list(dict.fromkeys(urls))


def snapshot(urls: list[str]) -> dict[str, list[Sample]]:
    out = {}
    for u in urls:
        got = fetch(u)
        if got is not None:
            out[u] = got
    return out


def _delta(before: list[Sample], after: list[Sample]) -> dict[tuple, float]:
    """Increase of each series; a counter that went down was reset (a restarted process, e.g.
    Triton killed by a chaos fault), so its whole new value is the increase, as in PromQL's rate."""
    b = {(n, lb): v for n, lb, v in before}
    out = {}
    for n, lb, v in after:
        old = b.get((n, lb), 0.0)
        out[(n, lb)] = v - old if v >= old else v
    return out


def _unit_ms(metric: str) -> float:
    if metric.endswith(("_ms", "_milliseconds")):
        return 1.0
    if metric.endswith(("_us", "_microseconds")):
        return 0.001
    return 1000.0  # Prometheus convention: seconds


def _match(labels: tuple, want: dict[str, str]) -> bool:
    d = dict(labels)
    return all(d.get(k) == v for k, v in want.items())


def histogram_stats(delta: dict[tuple, float], ref: MetricRef) -> dict | None:
    """count, mean and bucket-interpolated p50/p95/p99 (ms) of one histogram's increase."""
    scale = _unit_ms(ref.metric)
    buckets: dict[float, float] = {}
    total_sum = total_count = 0.0
    for (name, labels), v in delta.items():
        if not _match(labels, ref.labels):
            continue
        if name == ref.metric + "_bucket":
            le = dict(labels).get("le")
            bound = math.inf if le in ("+Inf", "Inf") else float(le)
            buckets[bound] = buckets.get(bound, 0.0) + v
        elif name == ref.metric + "_sum":
            total_sum += v
        elif name == ref.metric + "_count":
            total_count += v
    if total_count <= 0:
        return None
    out = {"count": int(total_count), "mean_ms": round(total_sum / total_count * scale, 3)}
    cum = [(b, buckets[b]) for b in sorted(buckets)]
    n = int(cum[-1][1]) if cum else 0
    ci = {}
    for q, key in ((0.5, "p50_ms"), (0.95, "p95_ms"), (0.99, "p99_ms")):
        out[key] = _quantile(q, cum, scale)
        if n:  # the k-th smallest sample is known only to its bucket: the interval spans the bucket
            ci[key] = interval(
                n,
                q,
                lambda k: _bucket_edge(k, cum, scale, 0),
                upper_at_rank=lambda k: _bucket_edge(k, cum, scale, 1),
            )
    if ci:
        out["ci"] = ci
    return out


def _bucket_edge(rank: int, cum: list[tuple[float, float]], scale: float, upper: int) -> float | None:
    """The low (upper=0) or high (upper=1) edge of the bucket holding the rank-th smallest sample."""
    prev_b = 0.0
    for b, c in cum:
        if c >= rank:
            edge = b if upper else prev_b
            return None if math.isinf(edge) else round(edge * scale, 3)
        prev_b = b
    return None


def _quantile(q: float, cum: list[tuple[float, float]], scale: float) -> float | None:
    """PromQL's histogram_quantile: linear interpolation inside the bucket that holds the rank."""
    if not cum or cum[-1][1] <= 0:
        return None
    rank = q * cum[-1][1]
    prev_b, prev_c = 0.0, 0.0
    for b, c in cum:
        if c >= rank:
            if math.isinf(b):
                return round(prev_b * scale, 3)  # beyond the last finite bucket: its bound
            if c == prev_c:
                return round(b * scale, 3)
            return round((prev_b + (b - prev_b) * (rank - prev_c) / (c - prev_c)) * scale, 3)
        prev_b, prev_c = b, c
    return None


def decompose(spec: Spec, before: dict, after: dict, client: dict) -> dict:
    """Per-stage and per-model server time, and what is left for network and serialisation."""
    delta: dict[tuple, float] = {}
    for url, samples in after.items():
        for k, v in _delta(before.get(url, []), samples).items():
            delta[k] = delta.get(k, 0.0) + v
    stages: dict[str, dict] = {}
    for sm in spec.observability.stages:
        ref = sm.latency
        if ref is None:
            continue
        if ref.type is MetricType.histogram:
            got = histogram_stats(delta, ref)
        elif ref.type is MetricType.counter_us and ref.count_metric:
            got = _counter_us(delta, ref)
        else:
            got = None
        if got:
            got["metric"] = ref.metric
            for part, pref in (("queue_ms", sm.queue), ("compute_ms", sm.compute)):
                extra = _counter_us(delta, pref) if pref is not None and pref.count_metric else None
                if extra:
                    got[part] = extra["mean_ms"]
            stages[sm.stage] = got
    models: dict[str, dict] = {}
    items: dict[str, float] = {}
    for (name, labels), v in delta.items():
        if name == ENGINE_ITEMS:
            model = dict(labels).get(ENGINE.model_label or "model", "?")
            items[model] = items.get(model, 0.0) + v
        if name in ENGINE_PARTS or name == ENGINE_REQUESTS:
            model = dict(labels).get(ENGINE.model_label or "model", "?")
            m = models.setdefault(model, {"_us": {}, "requests": 0})
            if name == ENGINE_REQUESTS:
                m["requests"] += int(v)
            else:
                m["_us"][ENGINE_PARTS[name]] = m["_us"].get(ENGINE_PARTS[name], 0.0) + v
    for model, m in list(models.items()):
        us = m.pop("_us")
        if m["requests"] <= 0:
            del models[model]
            continue
        for part, total in us.items():
            m[part] = round(total / m["requests"] / 1000.0, 3)
    for st in spec.dataflow.stages:  # model stages served by the engine: mean time, queue and compute apart
        if st.model is None or st.model.name not in models:
            continue
        m = models[st.model.name]
        compute = round(
            sum(m.get(k, 0.0) for k in ("compute_input_ms", "compute_infer_ms", "compute_output_ms")), 3
        )
        if st.id not in stages:
            stages[st.id] = {
                "count": m["requests"],
                "mean_ms": m.get("request_ms"),
                "queue_ms": m.get("queue_ms"),
                "compute_ms": compute,
                "metric": ENGINE_PARTS_GLOB,
            }
        else:
            stages[st.id].setdefault("queue_ms", m.get("queue_ms"))
            stages[st.id].setdefault("compute_ms", compute)
            visits = stages[st.id].get("count") or 0
            if visits > 0 and items.get(st.model.name):
                # the stage's own histogram counts visits, the engine counts items and calls
                stages[st.id]["items_per_visit"] = round(items[st.model.name] / visits, 3)
                stages[st.id]["calls_per_visit"] = round(m["requests"] / visits, 3)
    out: dict = {
        "client": {k: client.get(k) for k in ("mean_ms", "p50_ms", "p99_ms")},
        "stages": _in_flow_order(spec, stages),
        "models": dict(sorted(models.items())),
    }
    server_ms, source = _server_time(spec, stages, models)
    if server_ms is not None and client.get("mean_ms") is not None:
        out["server"] = {"mean_ms": server_ms, "source": source}
        out["network_serialisation_ms"] = round(client["mean_ms"] - server_ms, 3)
    return out


def _in_flow_order(spec: Spec, stages: dict) -> dict:
    order = {st.id: i for i, st in enumerate(spec.dataflow.stages)}
    return dict(sorted(stages.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _counter_us(delta: dict[tuple, float], ref: MetricRef) -> dict | None:
    """Mean (ms) of a cumulative microseconds counter over its request counter's increase."""
    us = sum(v for (n, lb), v in delta.items() if n == ref.metric and _match(lb, ref.labels))
    cnt = sum(v for (n, lb), v in delta.items() if n == ref.count_metric and _match(lb, ref.labels))
    return {"count": int(cnt), "mean_ms": round(us / cnt / 1000.0, 3)} if cnt > 0 else None


def _server_time(spec: Spec, stages: dict, models: dict) -> tuple[float | None, str]:
    for st in spec.dataflow.stages:
        if st.kind.value in ("ingress", "gateway") and st.id in stages:
            return stages[st.id]["mean_ms"], f"stage {st.id} ({stages[st.id]['metric']})"
    lt = spec.loadtest
    if lt and lt.target.protocol.startswith("triton") and models:
        n = sum(m["requests"] for m in models.values())
        total = sum(m.get("request_ms", 0.0) * m["requests"] for m in models.values())
        return round(total / n, 3), f"{ENGINE.name.capitalize()} {ENGINE.metric('request_duration').name}"
    return None, ""
