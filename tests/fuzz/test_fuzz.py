"""Fuzzing load + every check rule with mutated real specs: a located answer in time, or a finding.

`make test` runs a modest number of inputs per mutation family; `make fuzz` (the `fuzz`
Hypothesis profile) runs 20,000 per family, 100,000 in all, without shrinking, and writes every
failure as a reproducer under `.cache/fuzz/` instead of stopping at the first one.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz import strategies as S
from tests.fuzz.harness import REPRODUCERS, Tally, judge

LONG = settings.get_current_profile_name() == "fuzz"
# Modest in `make test`: ~40 inputs per family keep the suite's added time near 30 s here.
EXAMPLES = int(os.environ.get("ARCHKIT_FUZZ_EXAMPLES") or settings.default.max_examples) if LONG else 40

FAMILIES = {
    "line": S.line_mutation(),
    "token": S.token_mutation(),
    "value": S.value_mutation(),
    "tag": S.tag_injection(),
    "structure": S.structural_mutation(),
}
TALLIES: dict[str, Tally] = {}


def _fuzz_test(family: str, strategy: st.SearchStrategy[str]):
    tally = TALLIES.setdefault(family, Tally())

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None if LONG else settings.default.database,
        phases=[Phase.generate] if LONG else list(Phase),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(text: str) -> None:
        out = judge(text, tally, family)
        if not LONG:  # let Hypothesis shrink it; the long mode collects them all
            assert out.problem is None, f"{out.problem}\n{out.detail}"

    run()
    rate = tally.inputs / tally.seconds if tally.seconds else 0.0
    print(f"\nfuzz {family}: {tally.inputs} inputs in {tally.seconds:.1f} s ({rate:.1f}/s)")
    assert not tally.failures, f"{len(tally.failures)} reproducer(s) written to {REPRODUCERS}: " + ", ".join(
        p.name for p in tally.failures[:10]
    )


@pytest.mark.parametrize("family", list(FAMILIES))
def test_mutated_specs_get_located_answers_in_time(family: str) -> None:
    _fuzz_test(family, FAMILIES[family])
