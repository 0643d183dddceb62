"""The RAG variant's retrieval stages live against what `archkit capacity` takes for them.

Starts `python -m reference_service.llm serve --rag` (1,000 generated passages; the index must
already be cached, e.g. by one `make llm-rag-serve`), then two phases:

- design load: Poisson arrivals at the spec's 0.1 req/s for `--duration` seconds, each a streamed
  question with the spec's 64 output tokens (ignore_eos), so the embedding shares the cores with
  generation as it would in service;
- back to back: one question after the other with max_tokens 1 for `--burst` seconds (the
  embedding and search with the engine nearly idle; many samples).

Each answer's Server-Timing header carries the gateway's own embed and search times (the same
clock as llm_stage_duration_seconds). Prints a table of n, P50, P90, P99 and max per phase and
stage beside the spec's p50_ms/p99_ms for the stage (what `capacity` simulates), and writes the
samples as JSON to `--out`.

    python bench/rag_stages.py --out /tmp/rag-stages.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reference_service.llm import rag  # noqa: E402
from reference_service.llm.engine import llama_server_path, model_path  # noqa: E402

SPEC = ROOT / "specs" / "llm-rag-reference.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def questions(n: int) -> list[str]:
    towns = rag.towns(1000)
    rng = random.Random(7)
    asks = ("What colour is the lighthouse of {}?", "What does the market of {} sell?", "When was {} built?")
    return [rng.choice(asks).format(rng.choice(towns)) for _ in range(n)]


def ask(url: str, q: str, max_tokens: int) -> dict[str, float]:
    body = {"messages": [{"role": "user", "content": q}], "max_tokens": max_tokens, "stream": True}
    if max_tokens > 1:
        body["ignore_eos"] = True
    req = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=300) as r:
        timing = r.headers["Server-Timing"]
        for _ in r:
            pass
    return {k: float(v) for k, v in re.findall(r"(\w+);dur=([0-9.]+)", timing)}


def summary(xs: list[float]) -> str:
    a = np.asarray(xs)
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return f"{len(a)} | {p50:.2f} | {p90:.2f} | {p99:.2f} | {a.max():.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=200.0, help="seconds of Poisson load at --rate")
    ap.add_argument("--rate", type=float, default=0.1, help="req/s of the design-load phase")
    ap.add_argument("--burst", type=float, default=60.0, help="seconds of back-to-back questions")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    http, eng, emb = free_port(), free_port(), free_port()
    python = ROOT / "reference_service" / ".venv" / "bin" / "python"
    cmd = [str(python), "-m", "reference_service.llm", "serve", "--rag", "--http-port", str(http)]
    cmd += ["--engine-port", str(eng), "--embed-port", str(emb), "--ready-timeout", "120"]
    cmd += ["--llama-server", str(llama_server_path()), "--model", str(model_path())]
    log = Path(tempfile.mkdtemp(prefix="rag-bench-")) / "serve.log"
    url = f"http://127.0.0.1:{http}"
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    samples: dict[str, list[dict[str, float]]] = {"design": [], "burst": []}
    try:
        deadline = time.monotonic() + 120
        while b'"status":"ready"' not in _get(url + "/readyz"):
            if proc.poll() is not None or time.monotonic() > deadline:
                print(log.read_text(errors="replace")[-2000:], file=sys.stderr)
                return 1
            time.sleep(0.5)
        qs = iter(questions(10_000))
        # design load: open model, scheduled send times
        rng = np.random.default_rng(31)
        sends = np.cumsum(rng.exponential(1 / args.rate, int(args.duration * args.rate * 3) + 10))
        sends = sends[sends < args.duration]
        t0 = time.monotonic()
        threads = []
        for at in sends:
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            q = next(qs)
            t = threading.Thread(target=lambda q=q: samples["design"].append(ask(url, q, 64)))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        end = time.monotonic() + args.burst
        while time.monotonic() < end:
            samples["burst"].append(ask(url, next(qs), 1))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    args.out.write_text(json.dumps(samples, indent=1) + "\n")
    import yaml

    stages = {s["id"]: s for s in yaml.safe_load(SPEC.read_text())["dataflow"]["stages"]}
    print("phase | stage | n | P50 ms | P90 ms | P99 ms | max ms | spec p50_ms / p99_ms")
    for phase, rows in samples.items():
        for stage in ("embed", "search"):
            spec = f"{stages[stage]['p50_ms']} / {stages[stage]['p99_ms']}"
            print(f"{phase} | {stage} | {summary([r[stage] for r in rows])} | {spec}")
    return 0


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.read()
    except OSError:
        return b""


if __name__ == "__main__":
    sys.exit(main())
