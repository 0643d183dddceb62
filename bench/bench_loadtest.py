"""Benchmark archkit's load runner: requests/s against plain locust, and latency against wrk.

On a trivial local endpoint (a fixed-response asyncio HTTP server on 127.0.0.1, started here),
for the same users and duration, alternating runs:
- archkit's runner (the generated locustfile in `archkit.loadtest.worker`, unpaced) vs plain
  `locust -f locustfile.py --headless` on the same file: requests/s (target ≥ 0.9×);
- archkit's exact P50/P99 vs `wrk --latency` at the same concurrency (wrk is C and far faster:
  its numbers bound what the machine can do, they are not a target).
Run: .venv/bin/python bench/bench_loadtest.py [--users 20] [--seconds 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from archkit import api  # noqa: E402
from archkit.loadtest import plan as plan_mod  # noqa: E402
from archkit.loadtest.runner import free_port, run  # noqa: E402
from archkit.spec import load_text  # noqa: E402

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def serve(port: int) -> None:
    """A keep-alive HTTP responder: reads a request head (and body), answers 'ok'."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                m = re.search(rb"(?i)content-length:\s*(\d+)", head)
                if m:
                    await reader.readexactly(int(m.group(1)))
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


SPEC = """apiVersion: archkit/v1
metadata: {name: bench}
loadtest:
  target: {protocol: http, host: "http://127.0.0.1:PORT"}
  scenarios:
    - {id: get, method: GET, path: /}
  levels:
    - {id: baseline, kind: baseline, users: 10, duration_s: 5}
"""


def archkit_run(spec, locustfile: Path, users: int, seconds: float, work: Path) -> dict:
    p = plan_mod.build(spec, "baseline", users=users, duration=seconds, arrival="closed")
    p.phases[0].rate_rps = None  # unpaced: as fast as the users go
    p.max_requests = 10_000_000
    p.locustfile, p.payload_root = str(locustfile), str(work)
    data = run(p, work / "archkit")
    s = data.total.stats(seconds)
    return {
        "rps": s["request_rate_rps"],
        "p50_ms": s["p50_ms"],
        "p99_ms": s["p99_ms"],
        "requests": s["requests"],
    }


def locust_run(locustfile: Path, host: str, users: int, seconds: float, work: Path) -> dict:
    prefix = work / "plain"
    subprocess.run(
        [
            str(Path(sys.executable).with_name("locust")),
            "-f",
            str(locustfile),
            "--headless",
            "-u",
            str(users),
            "-r",
            str(users),
            "-t",
            f"{int(seconds)}s",
            "--host",
            host,
            "--only-summary",
            "--csv",
            str(prefix),
            "--archkit-rate",
            "0",
        ],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=seconds + 60,
    )
    with open(f"{prefix}_stats.csv") as fh:
        row = next(r for r in csv.DictReader(fh) if r["Name"] == "Aggregated")
    # locust's own Requests/s divides by first-to-last request time; use the run's length for both sides
    return {
        "rps": round(int(row["Request Count"]) / seconds, 1),
        "p50_ms": float(row["50%"]),
        "p99_ms": float(row["99%"]),
        "requests": int(row["Request Count"]),
        "locust_reported_rps": float(row["Requests/s"]),
    }


def wrk_run(host: str, users: int, seconds: float) -> dict:
    out = subprocess.run(
        ["wrk", "-t", "1", "-c", str(users), "-d", f"{int(seconds)}s", "--latency", host + "/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    def ms(label: str) -> float:
        v = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", out)
        n, unit = float(v.group(1)), v.group(2)
        return n / 1000 if unit == "us" else n * 1000 if unit == "s" else n

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"rps": rps, "p50_ms": ms("50"), "p99_ms": ms("99")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return
    port = free_port()
    # the endpoint runs in its own process: sharing the runner's GIL would add latency to one side only
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    time.sleep(0.5)
    try:
        measure(args, port)
    finally:
        server.terminate()
        server.wait()


def measure(args, port: int) -> None:
    host = f"http://127.0.0.1:{port}"
    spec = load_text(SPEC.replace("PORT", str(port)), "bench.yaml").spec
    files, _ = api.generate(spec, "bench.yaml", only=["locust"])
    results: dict[str, list[dict]] = {"archkit": [], "locust": [], "wrk": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        lf = work / "locustfile.py"
        lf.write_text(files["locust/locustfile.py"])
        for i in range(args.runs):
            order = ["archkit", "locust"] if i % 2 == 0 else ["locust", "archkit"]
            for who in order:
                r = (
                    archkit_run(spec, lf, args.users, args.seconds, work)
                    if who == "archkit"
                    else locust_run(lf, host, args.users, args.seconds, work)
                )
                results[who].append(r)
                print(who, r, file=sys.stderr)
            if shutil.which("wrk"):
                results["wrk"].append(wrk_run(host, args.users, args.seconds))
                print("wrk", results["wrk"][-1], file=sys.stderr)

    def med(who: str, key: str):
        vals = [r[key] for r in results[who] if r.get(key) is not None]
        return round(statistics.median(vals), 2) if vals else None

    summary = {who: {k: med(who, k) for k in ("rps", "p50_ms", "p99_ms")} for who in results if results[who]}
    summary["ratio_archkit_to_locust_rps"] = round(summary["archkit"]["rps"] / summary["locust"]["rps"], 3)
    summary["users"], summary["seconds"], summary["runs"] = args.users, args.seconds, args.runs
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
