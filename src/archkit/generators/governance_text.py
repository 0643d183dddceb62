"""Owners and confidence breakers in the words of the onboarding pages (seed 004 §1, §3.2)."""

from __future__ import annotations

from collections.abc import Callable

from archkit.checks.ak115_stage_without_owner import owner_of
from archkit.generators.jinja import md_text
from archkit.spec.governance import ConfidenceBreaker
from archkit.spec.model import Spec, Stage


def governance(spec: Spec, stages: list[Stage], code: Callable[[str], str]) -> dict[str, dict[str, str]]:
    """`owners`: each stage's owner (its own, else its service's; AK115), Markdown-escaped (seed 004
    §1's cache that nobody owned); `breakers`: each model's confidence breaker in words; `causes`:
    each stage's declared failure cause (seed 000 §3.1: the ASR's failures were long audio's OOM)."""
    return {
        "owners": {st.id: md_text(o) for st in stages if (o := owner_of(spec, st))},
        "causes": {st.id: md_text(st.failure_cause) for st in stages if st.failure_cause},
        "breakers": {
            st.id: line
            for st in stages
            if st.model is not None and (line := breaker_line(st.model.confidence_breaker, code))
        },
    }


def breaker_line(br: ConfidenceBreaker | None, code: Callable[[str], str]) -> str | None:
    """A model's confidence breaker in words (seed 004 §3.2), for its onboarding section."""
    if br is None:
        return None
    alert = " (alert `ConfidenceBreaker…` in the alert index)" if br.metric else ""
    return (
        f"Confidence breaker: when the mean of {code(br.output)} over {br.window_s:g} s falls below "
        f"{br.min_mean:g}, its traffic moves to stage {code(br.fallback)}{alert}."
    )
