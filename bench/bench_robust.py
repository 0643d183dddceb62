"""Bad input answered fast: `archkit check` on /dev/zero, on an endless pipe, and on a spec with
`instances: 1000000000`, each beside the same CLI on the unmodified example (the peer).

Each row is the whole CLI as a fresh process (start-up included), median of --runs.
Run: .venv/bin/python bench/bench_robust.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHKIT = [sys.executable, "-m", "archkit", "check"]
EXAMPLE = ROOT / "examples" / "industrial-inspection.yaml"


def timed(args: list[str], runs: int, stdin_cmd: list[str] | None = None) -> tuple[float, str]:
    times, first = [], ""
    for _ in range(runs):
        feeder = subprocess.Popen(stdin_cmd, stdout=subprocess.PIPE) if stdin_cmd else None
        start = time.perf_counter()
        out = subprocess.run(
            ARCHKIT + args,
            stdin=feeder.stdout if feeder else None,
            capture_output=True,
            text=True,
            timeout=120,
        )
        times.append(time.perf_counter() - start)
        if feeder:
            feeder.kill()
            feeder.wait()
        first = first or out.stdout.splitlines()[0]
    return statistics.median(times), first


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    runs = ap.parse_args().runs
    print("load:", os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        huge = Path(tmp) / "huge-instances.yaml"
        huge.write_text(EXAMPLE.read_text().replace("instances: 1\n", "instances: 1000000000\n", 1))
        rows = [
            ("peer: examples/industrial-inspection.yaml", timed([str(EXAMPLE)], runs)),
            ("/dev/zero", timed(["/dev/zero"], runs)),
            ("endless pipe on stdin (yes | archkit check -)", timed(["-"], runs, ["yes", "# padding"])),
            ("instances: 1000000000", timed([str(huge)], runs)),
        ]
    peer = rows[0][1][0]
    print("| input | median s | ratio to peer | first line |\n|---|---|---|---|")
    for name, (t, line) in rows:
        print(f"| {name} | {t:.3f} | {t / peer:.2f} | {line[:90].replace('|', '/')} |")


if __name__ == "__main__":
    main()
