"""Fuzzing load + every check rule with mutated real specs: a located answer in time, or a finding.

`make test` runs a modest number of inputs per mutation family (and Hypothesis shrinks any
failure). `make fuzz` (the `fuzz` Hypothesis profile) runs 100,000 inputs drawn from all
families at once, without shrinking, writes every failure as a reproducer under `.cache/fuzz/`
instead of stopping at the first one, logs its progress, and can be given a wall-clock deadline
(ARCHKIT_FUZZ_DEADLINE, Unix seconds) after which it stops and reports what it ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as S
from tests.fuzz.harness import REPRODUCERS, Tally, judge

LONG = settings.get_current_profile_name() == "fuzz"
# Modest in `make test`: 40 inputs per family keep the suite's added time near 30 s here.
SHORT_EXAMPLES = 40

FAMILIES = {
    "line": S.line_mutation(),
    "token": S.token_mutation(),
    "value": S.value_mutation(),
    "tag": S.tag_injection(),
    "structure": S.structural_mutation(),
}


@pytest.mark.skipif(LONG, reason="the long run below covers every family")
@pytest.mark.parametrize("family", list(FAMILIES))
def test_mutated_specs_get_located_answers_in_time(family: str) -> None:
    @settings(max_examples=SHORT_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(FAMILIES[family])
    def run(text: str) -> None:
        out = judge(text)
        assert out.problem is None, f"{out.problem}\n{out.detail}"

    run()


class _Deadline(BaseException):
    """Raised inside the test to stop Hypothesis at the wall-clock deadline (not a failure)."""


@pytest.mark.skipif(not LONG, reason="the long run: make fuzz (--hypothesis-profile=fuzz)")
def test_long_fuzz_run() -> None:
    total = int(os.environ.get("ARCHKIT_FUZZ_EXAMPLES") or settings.default.max_examples)
    deadline = float(os.environ.get("ARCHKIT_FUZZ_DEADLINE") or "inf")
    tallies = {f: Tally() for f in FAMILIES}
    order = list(FAMILIES)
    start = time.time()
    summary = REPRODUCERS / "summary.json"
    REPRODUCERS.mkdir(parents=True, exist_ok=True)

    def report(final: bool) -> dict:
        n = sum(t.inputs for t in tallies.values())
        wall = time.time() - start
        data = {
            "inputs": n,
            "wall_s": round(wall, 1),
            "inputs_per_s": round(n / wall, 2) if wall else 0.0,
            "failures": sum(len(t.failures) for t in tallies.values()),
            "max_input_s": round(max((t.slowest for t in tallies.values()), default=0.0), 3),
            "families": {f: {"inputs": t.inputs, "check_s": round(t.seconds, 1)} for f, t in tallies.items()},
            "reproducers": sorted(p.name for t in tallies.values() for p in t.failures),
            "final": final,
        }
        summary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return data

    @settings(max_examples=total, deadline=None, database=None, phases=[Phase.generate])
    @given(st.data())
    def run(data: st.DataObject) -> None:
        family = data.draw(st.sampled_from(order), label="family")
        text = data.draw(FAMILIES[family], label=family)
        if time.time() > deadline:  # after the draws, so that Hypothesis sees the same ones again
            raise _Deadline
        judge(text, tallies[family], family)
        n = sum(t.inputs for t in tallies.values())
        if n % 1000 == 0:
            d = report(False)
            print(f"fuzz: {n} inputs, {d['failures']} failure(s), {d['inputs_per_s']}/s", flush=True)

    with contextlib.suppress(_Deadline):
        run()
    data = report(True)
    print(f"\nfuzz: {json.dumps(data)}")
    assert not data["failures"], (
        f"{data['failures']} reproducer(s) in {REPRODUCERS}: {data['reproducers'][:10]}"
    )
