"""The reference LLM engine on this machine: output tokens/s and decode step time by running slots.

For each slot count N (llama-server --parallel N, 1024 tokens of context per slot), N streams at
once, each a 100-token prompt and 128 output tokens (ignore_eos, greedy), repeated; the server's
own timings give each request's decode ms per token; the aggregate output tokens/s is all output
tokens over the wall time of the round. Prefill ms per token and decode fits: `archkit calibrate
--llm-url` (docs/benchmarks.md, LLM section).

Run: .venv/bin/python bench/bench_llm_engine.py [--slots 1,2,3,4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reference_service.llm.engine import command, llama_server_path, model_path  # noqa: E402
from reference_service.llm.settings import LlmSettings  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def measure(slots: int, rounds: int, out_tokens: int) -> dict:
    s = dataclasses.replace(LlmSettings(), engine_port=_port(), parallel=slots, ctx_size=1024 * slots)
    log = tempfile.NamedTemporaryFile(prefix="llm-bench-", suffix=".log", delete=False)  # noqa: SIM115
    proc = subprocess.Popen(
        command(s, llama_server_path(), model_path()), stdout=log, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{s.engine_port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(url + "/health", timeout=1).status == 200:
                    break
            except OSError:
                time.sleep(0.1)
        prompt = _post(url + "/tokenize", {"content": "The quick brown fox jumps over the lazy dog. " * 12})[
            "tokens"
        ][:100]
        body = {
            "prompt": prompt,
            "n_predict": out_tokens,
            "ignore_eos": True,
            "temperature": 0,
            "cache_prompt": False,
        }
        _post(url + "/completion", {**body, "n_predict": 8})  # warm-up
        steps, rates = [], []
        for _ in range(rounds):
            timings: list[dict] = []

            def one(into: list[dict] = timings) -> None:
                into.append(_post(url + "/completion", body)["timings"])

            threads = [threading.Thread(target=one) for _ in range(slots)]
            t0 = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t0
            rates.append(slots * out_tokens / wall)
            steps += [t["predicted_per_token_ms"] for t in timings]
        return {
            "slots": slots,
            "requests": rounds * slots,
            "decode_ms_per_token_p50": round(statistics.median(steps), 2),
            "output_tokens_per_s_median": round(statistics.median(rates), 1),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        os.unlink(log.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slots", default="1,2,3,4")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--output-tokens", type=int, default=128)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for n in (int(x) for x in args.slots.split(",")):
        print(json.dumps(measure(n, args.rounds, args.output_tokens)), flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
