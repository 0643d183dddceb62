"""The long schema-valid fuzz run's ledger: one JSON line per batch, so the count accumulates.

Issue 28 asks for 5,000 schema-valid specs through check and capacity; on this project's shared
2-core machine a spec costs ~2.3 CPU s, so the run is cut into batches (`test_long_schema_valid_run`,
one seed each) that different sessions run, and the ledger adds them up. A batch is counted only
once it has ended (its line is written then); a batch number appears once (a rerun of the same
seed would count the same specs twice, so `totals` keeps the first line of each).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

LEDGER = "valid-ledger.jsonl"
_KEEP = ("batch", "specs", "stages", "tracebacks", "over_bounds", "cpu_s", "wall_s", "peak_rss_mib")


def read(path: Path) -> list[dict[str, Any]]:
    """The ledger's batches, first line of each batch number only."""
    if not path.exists():
        return []
    seen: set[int] = set()
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["batch"] in seen:
            continue
        seen.add(row["batch"])
        rows.append(row)
    return rows


def next_batch(path: Path) -> int:
    """One past the largest batch number in the ledger (1 for a new ledger)."""
    return max((r["batch"] for r in read(path)), default=0) + 1


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return ""
    return out.stdout.strip()


def append(path: Path, summary: dict[str, Any]) -> None:
    """Add one ended batch (a `test_long_schema_valid_run` summary) to the ledger."""
    row = {k: summary[k] for k in _KEEP if k in summary}
    row["load"] = [summary.get("load_at_start"), summary.get("load_at_end")]
    row["reproducers"] = summary.get("reproducers", [])
    row["commit"] = _commit()
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")


def totals(path: Path) -> dict[str, Any]:
    """The ledger's sums: batches, specs, renders, tracebacks, runs over the bounds, CPU s."""
    rows = read(path)
    return {
        "batches": len(rows),
        "specs": sum(r["specs"] for r in rows),
        "renders": sum(r.get("stages", {}).get("render", 0) for r in rows),
        "tracebacks": sum(r["tracebacks"] for r in rows),
        "over_bounds": sum(r["over_bounds"] for r in rows),
        "cpu_s": round(sum(r.get("cpu_s", 0.0) for r in rows), 1),
    }
