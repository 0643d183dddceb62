"""Start-up cost of the CLI: `archkit --help` against a bare interpreter and the heavy clients it avoids.

Run: .venv/bin/python bench/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def timed(cmd: list[str], runs: int) -> float:
    samples = []
    env = {**os.environ, "NO_COLOR": "1"}
    subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)  # warm the page cache
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    py = sys.executable
    rows = [
        ("python -c pass (baseline)", [py, "-c", "pass"]),
        ("archkit --help", [str(BIN / "archkit"), "--help"]),
        ("archkit --version", [str(BIN / "archkit"), "--version"]),
        (
            "archkit check examples/recommendation.yaml",
            [str(BIN / "archkit"), "check", "examples/recommendation.yaml"],
        ),
        ("python -c 'import locust' (avoided)", [py, "-c", "import locust"]),
        ("python -c 'import kubernetes' (avoided)", [py, "-c", "import kubernetes"]),
    ]
    base = None
    print(
        f"machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"median of {args.runs} runs"
    )
    print("| command | median ms | ratio to bare python |")
    print("|---|---:|---:|")
    for name, cmd in rows:
        ms = timed(cmd, args.runs)
        base = base or ms
        print(f"| `{name}` | {ms:.0f} | {ms / base:.1f}× |")


if __name__ == "__main__":
    main()
