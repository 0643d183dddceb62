"""Mutated cluster snapshots through `api.verify`: findings, or one StateError line, never a crash."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archkit import api
from archkit.errors import InputError
from tests.conftest import ROOT
from tests.fuzz import strategies as S

SPEC = ROOT / "examples" / "industrial-inspection.yaml"
SNAPSHOT = ROOT / "tests" / "verify" / "fixtures" / "industrial-inspection" / "snapshot.yaml"
_TMP = Path(tempfile.mkdtemp(prefix="archkit-fuzz-verify-"))


@cache
def _lines() -> tuple[str, ...]:
    return tuple(SNAPSHOT.read_text(encoding="utf-8").splitlines())


@st.composite
def mutated_snapshot(draw: st.DrawFn) -> str:
    """Replace a few values with extremes, hostile scalars and tags; delete or re-indent lines."""
    lines = list(_lines())
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["value", "value", "delete", "indent", "tag"]))
        line = lines[i]
        if op == "value" and ": " in line:
            lines[i] = line.split(": ", 1)[0] + ": " + draw(S.any_value())
        elif op == "tag" and ": " in line:
            key, value = line.split(": ", 1)
            lines[i] = f"{key}: {draw(st.sampled_from(S.TAGS))} {value}"
        elif op == "delete":
            del lines[i]
        elif op == "indent":
            lines[i] = "  " + line
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_snapshot())
def test_mutated_snapshots_give_findings_or_one_line(text: str) -> None:
    path = _TMP / "snapshot.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        result = api.verify(SPEC, snapshot=str(path))
    except InputError as exc:  # the snapshot cannot be used at all: one located line
        assert "\n" not in str(exc) and str(path) in str(exc), str(exc)
        return
    assert result is not None
