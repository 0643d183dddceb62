"""Generated control-flow stubs (seed 000 §3.2): they compile, their own generated tests pass
(timeouts, retries, fallbacks, breakers), and `verify --code` finds zero drift in them; a
deliberate edit is reported at the spec line and the code line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from archkit import api
from archkit.spec.model import Spec
from archkit.verify import Status
from archkit.verify.code import check_code
from tests.conftest import EXAMPLES, REFERENCE_SPECS
from tests.deploy.helpers import load_spec, render_one

SPECS = EXAMPLES + REFERENCE_SPECS
LOAN = next(p for p in EXAMPLES if p.stem == "loan-preapproval")


def _spec(path: Path) -> Spec:
    return load_spec(path)


def _render(spec: Spec, out: Path) -> Path:
    return render_one(spec, "stubs", out)


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_stubs_compile_pass_their_tests_and_have_zero_drift(spec_file: Path, tmp_path: Path) -> None:
    spec = _spec(spec_file)
    folder = _render(spec, tmp_path)
    for name in ("controlflow.py", "resilience.py", "test_controlflow.py"):
        compile((folder / name).read_text(encoding="utf-8"), name, "exec")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    findings = check_code(spec, folder)
    nodes = len(spec.controlflow.decisions) + len(spec.controlflow.calls)
    assert sum(f.code == "VC410" and f.status is Status.PASS for f in findings) == nodes
    assert [f.message for f in findings if f.status is not Status.PASS] == []


EDITS = [
    # (old text, new text, code): one call of examples/loan-preapproval.yaml at a time
    ("    timeout_ms = 1600.0\n", "    timeout_ms = 5000.0\n", "VC411"),
    ("    timeout_ms = 1600.0\n    retries = 3\n", "    retries = 3\n    timeout_ms = 1600.0\n", "VC411"),
    ("    retries = 3\n    backoff_ms = 200.0\n", "    retries = 4\n    backoff_ms = 200.0\n", "VC412"),
    ('    fallback = "call-score-unverified"\n', '    fallback = "call-score"\n', "VC413"),
    ("CircuitBreaker(0.3, 30.0, 60.0, 20)", "CircuitBreaker(0.5, 30.0, 60.0, 20)", "VC414"),
    ("def call_extract(", "def call_extract_v2(", "VC410"),
]


@pytest.mark.parametrize(
    ("old", "new", "code"), EDITS, ids=[e[2] + "-" + str(i) for i, e in enumerate(EDITS)]
)
def test_a_deliberate_edit_is_drift_located_in_both_files(
    tmp_path: Path, old: str, new: str, code: str
) -> None:
    spec = _spec(LOAN)
    folder = _render(spec, tmp_path)
    path = folder / "controlflow.py"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    drift = [f for f in check_code(spec, folder) if f.status is Status.DRIFT]
    assert [f.code for f in drift] == [code]
    f = drift[0]
    assert f.file.endswith("loan-preapproval.yaml") and f.line > 1
    if code != "VC410":
        file, line = f.where.rsplit(":", 1)
        assert file == str(path)
        edited = path.read_text(encoding="utf-8").splitlines()[int(line) - 1]
        if code == "VC414":  # located at the function's wiring, which names the module's breaker
            assert edited.strip() == "breaker = BREAKER_call_registry"
        else:
            assert edited.strip() in new or new.strip().splitlines()[0] in edited


def test_cli_verify_code(tmp_path: Path) -> None:
    folder = _render(_spec(LOAN), tmp_path)
    report = api.verify(LOAN, code=str(folder)).report
    assert report is not None and report.total(Status.DRIFT) == 0 and report.total(Status.PASS) > 30
