"""The LLM fidelity run (issue 31): calibrate -> capacity -> streaming load tests at fractions of the knee.

On the reference LLM service (reference_service/llm: llama-server + SmolLM2-135M, 2 slots x 1,024
tokens), in phases that each fit one quiet-machine measurement (bench/llm_fidelity.sh runs them
through a measurement lock or directly):

  predict   start the service, `archkit calibrate --llm-url` it, fold the calibration into
            specs/llm-reference.yaml (environment cpu) and predict with archkit.perf.llm: the
            knee (the last rate before TTFT P99 doubles over its light-load value), and TTFT
            P50/P99 and ITL P50 at each fraction of it (8,000 simulated requests, seed 0);
  level F   start the service, stream `--requests` requests at F x the predicted knee (Poisson,
            the spec's workload: 67 prompt tokens, 66 of them a shared prefix, 16 output tokens
            with ignore_eos) with `archkit loadtest` (openai-stream protocol) and keep the
            measured TTFT, ITL and end-to-end percentiles with their sample sizes;
  report    measured against predicted for every level (targets: TTFT P50 +-15 %, TTFT P99
            +-25 %, ITL P50 +-10 %), and the measured knee: the last measured level whose TTFT P99
            stays within twice that of the lowest level (the prediction's definition), against
            the predicted knee (+-20 %). Each target is judged twice: on the point estimate, and
            on the measured percentile's 95 % order-statistics interval (met when the prediction
            is within the tolerance of every value in it, missed when of none, else "cannot
            tell": a P99 of fewer than 368 requests always cannot).

The load goes to the engine itself (the `generate` stage the LLM model predicts) unless
`--target gateway`: the gateway's relay adds its own milliseconds, which the stage model does not
carry. Everything is written under --out as JSON; `report` prints a Markdown table.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "specs" / "llm-reference.yaml"
STAGE = "generate"
TARGETS = {"ttft_p50_ms": 15.0, "ttft_p99_ms": 25.0, "itl_p50_ms": 10.0}
KNEE_TARGET_PCT = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """The reference LLM service (gateway + llama-server) on free loopback ports, stopped on exit."""

    def __init__(self, log: Path) -> None:
        self.http, self.engine = free_port(), free_port()
        py = ROOT / "reference_service" / ".venv" / "bin" / "python"
        model = subprocess.run(
            [sys.executable, "-m", "reference_service.llm", "model-path"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        exe = os.environ.get("ARCHKIT_LLAMA_SERVER") or str(
            Path.home() / ".cache/archkit/llama-server/11434.0.0-avx2/llama-server"
        )
        cmd = [str(py if py.exists() else sys.executable), "-m", "reference_service.llm", "serve",
               "--http-port", str(self.http), "--engine-port", str(self.engine),
               "--llama-server", exe, "--model", model]  # fmt: skip
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/readyz", timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"the service exited ({self.proc.returncode}); see {log}")
            time.sleep(0.5)
        self.stop()
        raise SystemExit(f"the service was not ready in 60 s; see {log}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.log.close()

    def __enter__(self) -> Service:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def _archkit(*args: str) -> None:
    exe = Path(sys.executable).with_name("archkit")
    subprocess.run([str(exe), *args], cwd=ROOT, check=True)


def predict(out: Path, fractions: list[float], reuse: bool = False, rates: list[float] | None = None) -> dict:
    from archkit.calibrate.llm import efficiency, fit_decode
    from archkit.spec import load_file

    cal = out / "calibration.json"
    spec = load_file(SPEC).spec
    assert spec is not None
    if reuse and cal.exists():  # the measured fits kept; their efficiency figures derived again
        doc = json.loads(cal.read_text())
        entry = doc["llm"][STAGE]
        entry["decode"] = fit_decode(
            [(int(c), float(x), float(ms)) for c, x, ms in entry["samples"]["decode"]]
        )
        llm = spec.stage(STAGE).llm  # type: ignore[union-attr]
        file_bytes = entry["efficiency"].get("file_bytes") or entry["efficiency"].get("weight_bytes")
        assert llm is not None
        entry["efficiency"] = efficiency(
            llm, entry["prefill"], entry["decode"], file_bytes, entry.get("per_request")
        )
        cal.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        with Service(out / "service.log") as svc:
            url = f"http://127.0.0.1:{svc.engine}"
            _archkit("calibrate", str(SPEC), "--llm-url", url, "--env", "cpu", "-o", str(cal))
    doc = predict_from(cal, fractions, rates)
    (out / "predicted.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc


def predict_from(cal: Path, fractions: list[float], rates: list[float] | None = None) -> dict:
    """The knee and each level's TTFT/ITL percentiles from the calibration `cal`, at fractions of
    its own knee or, with `rates`, at those req/s."""
    from archkit.calibrate.apply import with_calibration
    from archkit.perf.llm import analysis, sim
    from archkit.spec import load_file

    spec = load_file(SPEC).spec
    assert spec is not None
    spec = with_calibration(spec, str(SPEC), "cpu", str(cal))
    stage = spec.stage(STAGE)
    assert stage is not None and stage.llm is not None
    a = analysis.analyse(spec, stage, base=SPEC.parent, search=True)
    assert a.rep is not None and a.knee_rps
    ttft_slo, tpot_slo = stage.llm.budgets.ttft_p99_ms, stage.llm.budgets.tpot_ms
    if rates:  # a later calibration predicts the rates measured levels offered
        fractions = [r / a.knee_rps for r in rates]
    levels = {}
    for f in fractions:
        rate = a.knee_rps * f
        req = sim.workload(stage.llm.workload, rate, analysis.SIM_REQUESTS, seed=0, base=SPEC.parent)
        s = sim.summarise([sim.simulate(a.rep, req, seed=0)], slo_ttft_ms=ttft_slo, slo_tpot_ms=tpot_slo)
        levels[f"{f:g}"] = {
            "rate_rps": round(rate, 4),
            "ttft_p50_ms": round(s.ttft_ms["p50"], 2),
            "ttft_p99_ms": round(s.ttft_ms["p99"], 2),
            "itl_p50_ms": round(s.itl_ms["p50"], 2),
            "e2e_p50_ms": round(s.e2e_ms["p50"], 1),
            "slo_attainment": s.slo_attainment,
            "simulated_requests": s.requests,
        }
    doc = {
        "kv_tokens": a.rep.kv_tokens,
        "concurrency": a.concurrency,
        "concurrency_binds": a.concurrency_binds,
        "capacity_rps": round(a.capacity_rps, 4),
        "knee_rps": round(a.knee_rps, 4),
        "efficiency": stage.llm.efficiency.model_dump(),
        "levels": levels,
    }
    return doc


def level(
    out: Path, fraction: float, requests: int, target: str, max_s: float = 580.0, recalibrate: bool = False
) -> dict:
    from archkit import api

    pred = json.loads((out / "predicted.json").read_text())
    rate = pred["knee_rps"] * fraction
    # a measurement holds the shared machine's lock: at most max_s of load, fewer requests if the
    # predicted knee is lower than the level's request count assumed (the level records its n)
    duration = round(min(requests / rate, max_s), 1)
    with Service(out / "service.log") as svc:
        port = svc.engine if target == "engine" else svc.http
        if recalibrate:
            # calibrate -> capacity -> loadtest in the same minutes, on the engine process the
            # load then meets: on a VM whose speed moves by ~20 % within half an hour (the
            # 2026-12-04 01:00 run, docs/benchmarks.md), a calibration from the start of the run
            # predicts the engine of its own minutes, not a later level's
            cal = out / f"calibration-{fraction:g}.json"
            t0 = time.strftime("%H:%M:%S", time.gmtime())
            _archkit("calibrate", str(SPEC), "--llm-url", f"http://127.0.0.1:{svc.engine}", "--env", "cpu",
                     "-o", str(cal))  # fmt: skip
            own = predict_from(cal, [], [rate]) | {"calibrated_utc": t0}
            (out / f"predicted-{fraction:g}.json").write_text(
                json.dumps(own, indent=2, sort_keys=True) + "\n"
            )
        warm_up(f"http://127.0.0.1:{port}")
        spec = yaml.safe_load(SPEC.read_text())
        spec["loadtest"] = {
            "target": {"protocol": "openai-stream", "host": f"http://127.0.0.1:{port}"},
            "scenarios": [{"id": "chat", "llm_stage": STAGE, "path": "/v1/chat/completions"}],
            "levels": [
                {"id": "fid", "kind": "baseline", "users": 8, "rate_rps": round(rate, 5), "arrival": "poisson",
                 "duration_s": duration}
            ],
        }  # fmt: skip
        path = out / f"spec-{fraction:g}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        load, started = os.getloadavg()[0], time.strftime("%H:%M:%S", time.gmtime())
        res = api.loadtest(
            path, "fid", prometheus=False, plots=False, report_dir=out / f"report-{fraction:g}"
        ).result
    e2e = res.measured["end_to_end"]
    m = e2e.get("measures") or {}
    doc = {
        "fraction": fraction,
        "rate_rps": round(rate, 4),
        "target": target,
        "load_before": round(load, 2),
        "started_utc": started,
        "duration_s": duration,
        "load_after": round(os.getloadavg()[0], 2),
        "requests": e2e["requests"],
        "errors": e2e["errors"],
        "ttft_p50_ms": m["ttft_ms"]["p50_ms"],
        "ttft_p99_ms": m["ttft_ms"]["p99_ms"],
        "ttft_n": m["ttft_ms"]["count"],
        "itl_p50_ms": m["itl_ms"]["p50_ms"],
        "itl_n": m["itl_ms"]["count"],
        "e2e_p50_ms": e2e.get("p50_ms"),
        "server_prompt_p50_ms": (m.get("server_prompt_ms") or {}).get("p50_ms"),
        "server_decode_per_token_p50_ms": (m.get("server_decode_per_token_ms") or {}).get("p50_ms"),
        "slo": (m.get("slo") or None),
        # each target's 95 % order-statistics interval (archkit.orderstats), which the report
        # judges the prediction against beside the point estimate
        "ci": {
            "ttft_p50_ms": (m["ttft_ms"].get("ci") or {}).get("p50_ms"),
            "ttft_p99_ms": (m["ttft_ms"].get("ci") or {}).get("p99_ms"),
            "itl_p50_ms": (m["itl_ms"].get("ci") or {}).get("p50_ms"),
        },
    }
    (out / f"measured-{fraction:g}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc


def warm_up(url: str) -> None:
    """Two of the workload's requests at once, so that each slot holds the shared prefix before the
    measured run, as in the steady state the model predicts (a freshly started engine prefills the
    whole 67-token prompt once per slot: ~0.4 s, which would be the P99 of a 20-request level)."""
    import threading

    import numpy as np

    from archkit.loadtest.runtime.llm import LlmLoad
    from archkit.plans.loadtest import llm_load
    from archkit.spec import load_file

    spec = load_file(SPEC).spec
    assert spec is not None and spec.loadtest is not None
    sc = spec.loadtest.scenarios[0].model_copy(update={"llm_stage": STAGE})
    plan = llm_load(sc, spec)
    assert plan is not None
    body = LlmLoad.of(ast.literal_eval(plan.literal)).body("/v1/chat/completions", np.random.default_rng(0))

    def one() -> None:
        req = urllib.request.Request(url + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(req, timeout=60) as r:  # noqa: S310 - loopback
            r.read()

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def idle_probe(out: Path, gaps: list[float], repeats: int) -> dict:
    """The engine's own prompt and decode times after an idle gap (evidence for a level's miss).

    The reference service as a level starts it, both slots warmed; then for each gap, `repeats` of
    the workload's requests one at a time, each sent `gap` seconds after the previous one ended,
    streamed (as the load test sends them) and, at the shortest and longest gap, not streamed (as
    the calibration's decode sweep sends them). Per gap: the medians of the server's `prompt_ms`
    and `predicted_per_token_ms` and of the client's TTFT and its per-token gaps (first four of a
    request and the rest apart)."""
    import http.client

    import numpy as np

    from archkit.loadtest.runtime.llm import LlmLoad
    from archkit.plans.loadtest import llm_load
    from archkit.spec import load_file

    spec = load_file(SPEC).spec
    assert spec is not None and spec.loadtest is not None
    plan = llm_load(spec.loadtest.scenarios[0].model_copy(update={"llm_stage": STAGE}), spec)
    assert plan is not None
    body = LlmLoad.of(ast.literal_eval(plan.literal)).body("/v1/chat/completions", np.random.default_rng(0))

    def one(port: int, stream: bool) -> dict:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        t0 = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", json.dumps(body | {"stream": stream}).encode(),
                     {"Content-Type": "application/json"})  # fmt: skip
        resp = conn.getresponse()
        times, timings = [], {}
        if stream:
            for raw in resp:
                line = raw.strip()
                if not line.startswith(b"data:") or line == b"data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                if ((chunk.get("choices") or [{}])[0].get("delta") or {}).get("content"):
                    times.append(time.perf_counter())
                timings = chunk.get("timings") or timings
        else:
            timings = json.loads(resp.read()).get("timings") or {}
        conn.close()
        gaps_ms = [1000 * (b - a) for a, b in zip(times, times[1:], strict=False)]
        return {"ttft": 1000 * (times[0] - t0) if times else None, "gaps": gaps_ms,
                "prompt_ms": timings.get("prompt_ms"), "decode_ms": timings.get("predicted_per_token_ms")}  # fmt: skip

    def med(xs: list) -> float | None:
        xs = [x for x in xs if x is not None]
        return round(float(np.median(xs)), 2) if xs else None

    rows = []
    with Service(out / "service.log") as svc:
        warm_up(f"http://127.0.0.1:{svc.engine}")
        for gap in gaps:
            for stream in (True, False) if gap in (min(gaps), max(gaps)) else (True,):
                got = []
                for _ in range(repeats):
                    time.sleep(gap)
                    got.append(one(svc.engine, stream))
                rows.append({
                    "gap_s": gap, "stream": stream, "n": len(got),
                    "server_prompt_ms": med([g["prompt_ms"] for g in got]),
                    "server_decode_ms": med([g["decode_ms"] for g in got]),
                    "client_ttft_ms": med([g["ttft"] for g in got]),
                    "client_gap_first4_ms": med([x for g in got for x in g["gaps"][:4]]),
                    "client_gap_rest_ms": med([x for g in got for x in g["gaps"][4:]]),
                })  # fmt: skip
                print(json.dumps(rows[-1]), flush=True)
    doc = {"load": os.getloadavg()[0], "rows": rows}
    (out / "idle-probe.json").write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def _err(pred: float, got: float) -> float:
    return round(100.0 * (pred - got) / got, 1) if got else float("nan")


def _interval(got: dict, key: str) -> list | None:
    ci = (got.get("ci") or {}).get(key)
    return [ci["lo_ms"], ci["hi_ms"], ci["n"]] if ci else None


def _span(iv: list | None) -> str:
    if not iv:
        return ""
    lo, hi, n = iv
    return f", [{lo:g}, {'∞)' if hi is None else f'{hi:g}]'} of n={n}"


def _within_95(pred: float, got: dict, key: str, tol: float) -> str:
    """The prediction against the measured percentile's 95 % interval: met, missed, or cannot tell
    (a level measured before the intervals were recorded: not known)."""
    from archkit.orderstats import within_tolerance

    ci = (got.get("ci") or {}).get(key)
    if not ci:
        return "not known"
    return {True: "met", False: "missed", None: "cannot tell"}[within_tolerance(pred, ci, tol)]


def measured_knee(predicted: float, measured: list[dict]) -> dict:
    """The prediction's definition on the measured levels, in order of rate: the last level before
    the first whose TTFT P99 is over twice the lightest level's (or that had errors). A level above
    that crossing whose P99 falls back under it (a P99 of ~100 requests is its largest few values)
    does not move the knee, as it would not stop the prediction's sweep; it is listed."""
    levels = sorted(measured, key=lambda g: g["rate_rps"])
    light = levels[0]["ttft_p99_ms"]
    first = next((i for i, g in enumerate(levels) if g["ttft_p99_ms"] > 2 * light or g["errors"]), None)
    below = levels if first is None else levels[:first]
    mk = below[-1]["rate_rps"] if below else None
    above = None if first is None else levels[first]["rate_rps"]
    back = (
        [] if first is None else [g["rate_rps"] for g in levels[first + 1 :] if g["ttft_p99_ms"] <= 2 * light]
    )
    err = _err(predicted, mk) if mk else float("nan")
    return {"predicted": predicted, "measured": mk, "bracket": [mk, above], "error_pct": err,
            "within": abs(err) <= KNEE_TARGET_PCT, "light_ttft_p99_ms": light, "censored": above is None,
            "under_again_above_the_crossing_rps": back}  # fmt: skip


def report(out: Path) -> dict:
    pred = json.loads((out / "predicted.json").read_text())
    rows, measured = [], []
    for mfile in sorted(out.glob("measured-*.json"), key=lambda f: float(f.stem.split("-", 1)[1])):
        got = json.loads(mfile.read_text())
        # the prediction at the rate this level offered (levels set from an earlier prediction
        # are compared with a later one by their rate, not their fraction); a level calibrated in
        # its own minutes (level --recalibrate) is compared with its own calibration's prediction
        own = out / f"predicted-{got['fraction']:g}.json"
        own_pred = json.loads(own.read_text()) if own.exists() else None
        candidates = (own_pred or pred)["levels"].values()
        p = next(
            (p for p in candidates if abs(p["rate_rps"] - got["rate_rps"]) <= 0.01 * got["rate_rps"]), None
        )
        if p is None:
            continue
        measured.append(got)
        f = p["rate_rps"] / pred["knee_rps"]
        checks = {k: {"predicted": p[k], "measured": got[k], "error_pct": _err(p[k], got[k]),
                      "within": abs(_err(p[k], got[k])) <= tol, "tolerance_pct": tol,
                      "interval": _interval(got, k), "within_95": _within_95(p[k], got, k, tol)}
                  for k, tol in TARGETS.items()}  # fmt: skip
        rows.append({"fraction": float(f), "rate_rps": p["rate_rps"], "requests": got["requests"],
                     "own_knee_rps": own_pred["knee_rps"] if own_pred else None,
                     "itl_n": got["itl_n"], "load": [got["load_before"], got["load_after"]], "checks": checks})  # fmt: skip
    knee = None
    if measured:
        knee = measured_knee(pred["knee_rps"], measured)
        own = [r["own_knee_rps"] for r in rows if r["own_knee_rps"]]
        if own and knee["measured"]:  # levels calibrated in their own minutes: every calibration's knee
            mid = statistics.median([pred["knee_rps"], *own])
            knee["levels_own_knees_rps"] = own
            knee["median_of_calibrations_rps"] = round(mid, 4)
            knee["median_error_pct"] = _err(mid, knee["measured"])
    doc = {"predicted": pred, "levels": rows, "knee": knee}
    (out / "fidelity.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    print("| fraction of knee | rate req/s | requests (ITL gaps) | load | TTFT P50 pred/meas (err) | "
          "TTFT P99 pred/meas (err) | ITL P50 pred/meas (err) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        c = r["checks"]
        cells = [f"{c[k]['predicted']:g} / {c[k]['measured']:g} ms ({c[k]['error_pct']:+g} %{'' if c[k]['within'] else ' ✗'}; "
                 f"95 %: {c[k]['within_95']}{_span(c[k]['interval'])})"
                 for k in TARGETS]  # fmt: skip
        print(f"| {r['fraction']:g} | {r['rate_rps']:g} | {r['requests']} ({r['itl_n']}) | "
              f"{r['load'][0]:g}-{r['load'][1]:g} | " + " | ".join(cells) + " |")  # fmt: skip
    if knee:
        got = (
            "none (the lightest level already crossed)"
            if knee["measured"] is None
            else f"{knee['measured']:g} req/s"
        )
        print(f"\nknee: predicted {knee['predicted']:g} req/s, measured {got} "
              f"(bracket {knee['bracket']}, light TTFT P99 {knee['light_ttft_p99_ms']:g} ms): "
              + ("censored: the knee is above every level offered" if knee["censored"] else f"{knee['error_pct']:+g} %{'' if knee['within'] else ' ✗'}"))  # fmt: skip
        if knee["under_again_above_the_crossing_rps"]:
            print(
                f"TTFT P99 under twice the light one again above the crossing at {knee['under_again_above_the_crossing_rps']} req/s"
            )
        if knee.get("levels_own_knees_rps"):
            print(f"the knees the levels' own calibrations predicted: {knee['levels_own_knees_rps']} req/s; "
                  f"the median of the run's calibrations {knee['median_of_calibrations_rps']:g} req/s "
                  f"({knee['median_error_pct']:+g} %)")  # fmt: skip
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("phase", choices=["predict", "level", "report", "idle-probe"])
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "llm-fidelity")
    ap.add_argument("--fractions", default="0.3,0.6,0.85,1.0,1.3", help="of the predicted knee (predict)")
    ap.add_argument("--fraction", type=float, help="level: the fraction of the predicted knee to offer")
    ap.add_argument("--requests", type=int, default=20, help="level: requests to send")
    ap.add_argument("--max-s", type=float, default=580.0, help="level: at most this many seconds of load")
    ap.add_argument("--target", choices=["engine", "gateway"], default="engine")
    ap.add_argument(
        "--recalibrate", action="store_true",
        help="level: calibrate the freshly started engine first and predict the level from that",
    )  # fmt: skip
    ap.add_argument(
        "--reuse", action="store_true", help="predict: keep --out's calibration, re-derive its efficiency"
    )
    ap.add_argument("--gaps", default="0,0.3,1,3", help="idle-probe: seconds idle before each request")
    ap.add_argument("--rates", help="predict: at these req/s (comma-separated) instead of --fractions")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.phase == "predict":
        print(
            json.dumps(
                predict(
                    args.out,
                    [float(x) for x in args.fractions.split(",")],
                    args.reuse,
                    [float(x) for x in args.rates.split(",")] if args.rates else None,
                ),
                indent=2,
            )
        )
    elif args.phase == "level":
        if args.fraction is None:
            ap.error("level needs --fraction")
        print(
            json.dumps(
                level(args.out, args.fraction, args.requests, args.target, args.max_s, args.recalibrate),
                indent=2,
            )
        )
    elif args.phase == "idle-probe":
        idle_probe(args.out, [float(x) for x in args.gaps.split(",")], args.requests)
    else:
        report(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
