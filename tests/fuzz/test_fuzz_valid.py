"""Schema-valid specs at the edges (tests/fuzz/schema_valid.py) through check, capacity, the
fault-tree analysis and a sample of renders, within time and memory bounds.

`make test` runs a few; `make fuzz` (the `fuzz` profile) runs ARCHKIT_FUZZ_VALID specs (default
5,000), renders every RENDER_EVERY-th, writes `summary-valid.json` beside the mutation run's
summary, and fails on any traceback or run over the bounds (reproducers under .cache/fuzz/).

The long run is sharded so that its count accumulates across sessions (issue 28: 5,000 specs take
~3 hours of an idle core here): each run is one batch, Hypothesis seeded with the batch number
(ARCHKIT_FUZZ_BATCH; default the next one after the ledger's last), and appends one JSON line to
`valid-ledger.jsonl` (batch, specs, failures, CPU s, load, commit) when it ends, at its count or at
ARCHKIT_FUZZ_DEADLINE. `summary-valid.json` carries the ledger's totals (`tests.fuzz.ledger`).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import time

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz import ledger
from tests.fuzz.harness import REPRODUCERS
from tests.fuzz.schema_valid import schema_valid_spec
from tests.fuzz.valid_harness import BOUNDS_S, MAX_RSS_MIB, ValidTally, run_valid

LONG = settings.get_current_profile_name() == "fuzz"
RENDER_EVERY = 16  # 5,000 specs: 313 renders


@pytest.mark.skipif(LONG, reason="the long run below")
def test_schema_valid_specs_stay_within_bounds() -> None:
    tally = ValidTally()

    @settings(
        max_examples=6,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,  # the same six specs every run: `make test` is no lottery; `make fuzz` explores
    )
    @given(schema_valid_spec())
    def run(text: str) -> None:
        problems = run_valid(text, tally, render=tally.inputs % 3 == 0)
        assert not problems, problems

    run()


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # the forked runs (and the tools they ran)
    return ru.ru_utime + ru.ru_stime


class _Deadline(BaseException):
    """Stops Hypothesis at the wall-clock deadline (not a failure)."""


@pytest.mark.skipif(not LONG, reason="the long run: make fuzz (--hypothesis-profile=fuzz)")
def test_long_schema_valid_run() -> None:
    total = int(os.environ.get("ARCHKIT_FUZZ_VALID") or 5000)
    deadline = float(os.environ.get("ARCHKIT_FUZZ_DEADLINE") or "inf")
    tally = ValidTally()
    start = time.time()
    REPRODUCERS.mkdir(parents=True, exist_ok=True)
    summary = REPRODUCERS / "summary-valid.json"
    book = REPRODUCERS / ledger.LEDGER
    batch = int(os.environ.get("ARCHKIT_FUZZ_BATCH") or ledger.next_batch(book))
    load = os.getloadavg()

    def report(final: bool) -> dict:
        wall = time.time() - start
        data = {
            "specs": tally.inputs,
            "stages": tally.stages,
            "tracebacks": tally.tracebacks,
            "over_bounds": tally.over_bounds,
            "bounds_s": BOUNDS_S,
            "max_rss_mib": MAX_RSS_MIB,
            "peak_rss_mib": round(tally.peak_rss_mib),
            "tools_peak_rss_mib": round(tally.tools_rss_mib),
            "cpu_s": round(time.process_time() + _children_cpu(), 1),
            "slowest_s": {k: round(v, 3) for k, v in tally.slowest.items()},
            "wall_s": round(wall, 1),
            "load_at_start": [round(x, 1) for x in load],
            "load_at_end": [round(x, 1) for x in os.getloadavg()],
            "reproducers": sorted(p.name for p in tally.failures),
            "final": final,
            "batch": batch,
        }
        if final:
            ledger.append(book, data)
        data["ledger"] = ledger.totals(book)
        summary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return data

    @settings(
        max_examples=total,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(batch)  # the batch number: a batch is reproducible, and the next one explores new specs
    @given(st.data())
    def run(data: st.DataObject) -> None:
        text = data.draw(schema_valid_spec())
        if time.time() > deadline:
            raise _Deadline
        run_valid(text, tally, render=tally.inputs % RENDER_EVERY == 0)
        if tally.inputs % 100 == 0:
            d = report(False)
            print(
                f"fuzz-valid: {d['specs']} specs, {d['tracebacks']} tracebacks, {d['over_bounds']} over",
                flush=True,
            )

    with contextlib.suppress(_Deadline):
        run()
    data = report(True)
    print(f"\nfuzz-valid: {json.dumps(data)}")
    assert not data["tracebacks"] and not data["over_bounds"], data["reproducers"][:10]
