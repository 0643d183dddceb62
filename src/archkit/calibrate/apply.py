"""Fold a calibration file into the spec's environment: measured service times replace the declared.

`environments[].calibration` names a file written by `archkit calibrate` (relative to the spec's
folder). When that environment is applied, each calibrated model stage gets a `service_time`
table from the file — per batch size, the median compute input (copy), infer (compute) and
output (overhead) times — in place of the environment's or the stage's own; each stage measured
from the service's own stage histograms (`stages`: a gateway's decode, crop, cache, ...) gets the
its measured median as `cpu_ms` and the P99 of its measured spread as `cpu_p99_ms`
(`stage_times`; an older file's mean becomes the median of the budgets' spread,
`median_of_mean`), and the ingress stage the time a client sees beyond the service's
whole-request histogram; a one-machine environment
(`cpu_cores`) gets the cores its concurrency sweep shows the machine delivers (`effective_cores`);
each calibrated LLM stage (the file's `llm` entries, `archkit calibrate --llm-url`) gets the
measured `llm.efficiency` figures in place of the declared defaults, and the engine's measured KV
capacity and slot count in place of the declared ones. Only the in-memory spec changes; the file
on disk is never rewritten.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from archkit.errors import InputError
from archkit.spec import source_of
from archkit.spec.model import BatchTiming, Spec, Stage, StageOverride, copy_paths

MAX_BYTES = 4 * 1024 * 1024


class CalibrationError(InputError):
    """Calibration failed: a referenced calibration file is missing or not one, or a sweep could not
    run (no model stage, bad inputs, out of time). An input error: `archkit calibrate` exits 2."""


def _where(spec: Spec, index: int) -> str:
    smap = source_of(spec)
    loc = smap.at(("environments", index, "calibration"))
    return f"{smap.file}:{loc.line}:{loc.col}"


def read(path: Path) -> dict:
    """The calibration document, checked for its kind and bounded in size."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise CalibrationError(f"{path}: larger than {MAX_BYTES} bytes, not a calibration file")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"{path}: cannot read the calibration: {exc}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "calibration"
        or not isinstance(doc.get("models"), dict)
    ):
        raise CalibrationError(f"{path}: not an archkit calibration file (kind: calibration, models)")
    return doc


def timings(entry: dict) -> list[BatchTiming]:
    """The service-time table of one calibrated model (medians per part, ms)."""
    out = []
    for b in entry.get("batches", []):
        try:
            out.append(
                BatchTiming(
                    batch_size=int(b["batch_size"]),
                    copy_ms=float(b["compute_input_ms"]["p50"]),
                    compute_ms=float(b["compute_infer_ms"]["p50"]),
                    overhead_ms=float(b["compute_output_ms"]["p50"]),
                    measured=True,
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    return sorted(out, key=lambda t: t.batch_size)


def with_calibration(spec: Spec, file: str, env: str | None, override: str | None = None) -> Spec:
    """A copy of the spec whose environment `env` carries its calibration's service times.

    `override`: another calibration file (relative to the current directory) in place of the one
    the environment names, e.g. one just measured on this machine (`make demo` writes it to out/).
    """
    if not env:
        return spec
    index, e = next(((i, x) for i, x in enumerate(spec.environments) if x.id == env), (None, None))
    if e is None or index is None or not (override or e.calibration):
        return spec
    base = Path(file).resolve().parent if file and not file.startswith("<") else Path.cwd()
    path = Path(override).resolve() if override else base / str(e.calibration)
    if not path.is_file():
        raise CalibrationError(
            f"{_where(spec, index)}: calibration file {e.calibration} not found under {base} "
            f"(write it with: archkit calibrate {file} --env {env} -o {e.calibration})"
        )
    doc = read(path)
    clone = spec.model_copy(deep=True)
    clone.__dict__.pop("_archkit_index", None)
    copy_paths(spec, clone)  # findings keep pointing at the user's lines
    ce = clone.environments[index]
    if override:  # what AK230 and the reports read as this environment's calibration from now on
        ce.calibration = str(path)
    by_model = {st.model.name: st for st in clone.dataflow.stages if st.model is not None}
    for name, entry in doc["models"].items():
        st = by_model.get(name)
        table = timings(entry) if isinstance(entry, dict) else []
        if st is None or not table:
            continue
        ov = next((o for o in ce.stages if o.stage == st.id), None)
        if ov is None:
            ov = StageOverride(stage=st.id)
            ce.stages.append(ov)
        ov.service_time = table
    for sid, entry in (doc.get("stages") or {}).items():
        st = clone.stage(str(sid))
        if st is None or not isinstance(entry, dict):
            continue
        outside = entry.get("outside") is True
        if not (stage_calibratable(st) or (outside and st.kind.value in ("ingress", "gateway"))):
            continue
        ov = next((o for o in ce.stages if o.stage == st.id), None)
        median, p99 = stage_times(st, ov or StageOverride(stage=st.id), entry)
        if median is None:
            continue
        if ov is None:
            ov = StageOverride(stage=st.id)
            ce.stages.append(ov)
        ov.cpu_ms = round(median, 4)
        ov.cpu_p99_ms = None if p99 is None else round(p99, 4)
    _llm_efficiency(clone, doc.get("llm"))
    if ce.cpu_cores is not None:
        clone._effective_cores = effective_cores(doc, ce.cpu_cores)
    return clone


def effective_cores(doc: dict, cores: float) -> float | None:
    """The cores a one-machine environment delivers, from the calibration's concurrency sweep.

    Two instances running at once on this session's 2 vCPUs complete 1.77x the requests of one
    (not 2x: the vCPUs share a physical core's units on the host, which the guest cannot see),
    so each of two jobs runs at 0.88 of its measured speed. The efficiency is taken from a model
    with at least two instances, at concurrency min(instances, cores): speedup / concurrency,
    the best such model's (another may be bound by something else), scaled to the cores. The
    speed-up at 2 is the median of the sweep's paired rounds (`sweep.paired_speedup`): one 8 s
    window read 1.054x to 1.77x on this machine as neighbours came and went. None when no model
    could show it; never more than `cores`.
    """
    best = None
    for entry in (doc.get("models") or {}).values():
        if not isinstance(entry, dict) or int(entry.get("instances") or 1) < 2:
            continue
        c = min(int(entry["instances"]), int(cores))
        point = next((p for p in entry.get("concurrency") or [] if p.get("concurrency") == c), None)
        speedup = point.get("speedup") if isinstance(point, dict) else None
        if c >= 2 and isinstance(speedup, int | float) and speedup > 0:
            eff = min(1.0, float(speedup) / c)
            best = eff if best is None else max(best, eff)
    return None if best is None else round(cores * best, 3)


Z95 = 1.6448536269514722  # standard normal 95th percentile


def _num(entry: dict, key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def stage_times(st: Stage, ov: StageOverride, entry: dict) -> tuple[float | None, float | None]:
    """(median, P99) of a calibrated stage's processor time (ms) from its calibration entry.

    An entry with per-request percentiles (`p50_ms`, `p95_ms`: `calibrate.sweep.robust_stage`)
    gives the median itself and the P99 of the log-normal through its P50 and P95 (σ = ln(P95 /
    P50) / z95): the sample's own P99 is, over 30 requests, their maximum, which one slow request
    sets. An older entry with only the mean gives the median of the budgets' spread with that mean
    (`median_of_mean`) and no P99. A stage that is not log-normal keeps its distribution's spread
    (no P99). (None, None): nothing usable.
    """
    p50, p95 = _num(entry, "p50_ms"), _num(entry, "p95_ms")
    if p50 is not None and p95 is not None:
        if st.service_distribution != "lognormal":
            return p50, None
        if p95 <= p50 or p50 <= 0:
            return p50, p50  # no measured spread: the same time every request
        from archkit.perf.resources import Z99

        return p50, p50 * math.exp(math.log(p95 / p50) / Z95 * Z99)
    mean = _num(entry, "mean_ms")
    return (median_of_mean(st, ov, mean), None) if mean is not None else (None, None)


def median_of_mean(st: Stage, ov: StageOverride, mean_ms: float) -> float:
    """The `cpu_ms` whose distribution has the measured mean.

    `cpu_ms` is the median of the stage's service time (`perf.resources.service_median_ms`), a
    log-normal with the spread of its P50 -> P99 by default, whose mean is median * e^(s^2/2): the
    validate stage's budgets (2 -> 100 ms) give s = 0.60 and a mean 1.19x the median, so taking a
    measured mean as the median over-predicted it by 19 % (0.73 vs 0.52 ms measured at 2 req/s).
    """
    from archkit.perf.resources import lognormal_sigma

    if st.service_distribution == "exponential":
        return mean_ms * math.log(2)
    if st.service_distribution == "deterministic":
        return mean_ms
    s = lognormal_sigma(ov.p50_ms or st.p50_ms, ov.p99_ms or st.p99_ms)
    return mean_ms / math.exp(s * s / 2)


def stage_calibratable(st: Stage) -> bool:
    """A stage whose processor time `calibrate` measures from the service's own stage histogram:
    one that runs inside a service, is not a model (Triton measures those) and is not the whole
    request (an ingress or gateway stage's histogram covers every other stage)."""
    return st.model is None and st.service is not None and st.kind.value not in ("ingress", "gateway")


_LLM_EFFICIENCY = (
    "prefill_mfu",
    "decode_bandwidth",
    "step_overhead_ms",
    "request_overhead_ms",
    "client_overhead_ms",
    "sequence_overhead_ms",
)


def _llm_efficiency(spec: Spec, entries: object) -> None:
    """Measured prefill MFU, decode bandwidth share, step overhead and the per-request overheads
    (engine set-up, client share) replace an LLM stage's declared ones; the engine's measured KV
    capacity (`kv_capacity.tokens`) and sequence slots (`kv_capacity.slots`: llama.cpp's
    --parallel) replace `engine.kv_capacity_tokens` and
    `engine.max_num_seqs`, so that the predicted concurrency before requests queue is the engine's."""
    if not isinstance(entries, dict):
        return
    for stage_id, entry in entries.items():
        st = spec.stage(str(stage_id))
        if st is None or st.llm is None or not isinstance(entry, dict):
            continue
        eff = entry.get("efficiency")
        for field in _LLM_EFFICIENCY:
            value = eff.get(field) if isinstance(eff, dict) else None
            # a measured overhead of 0 ms is a measurement (the fit found none), not a missing one
            if isinstance(value, int | float) and (
                value > 0 or (field.endswith("overhead_ms") and value == 0)
            ):
                setattr(st.llm.efficiency, field, float(value))
        kv = entry.get("kv_capacity")
        for key, field in (("tokens", "kv_capacity_tokens"), ("slots", "max_num_seqs")):
            value = kv.get(key) if isinstance(kv, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                setattr(st.llm.engine, field, value)
