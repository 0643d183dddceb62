"""A generated alert's promtool tests hold and can fail: the real promtool checks the rules, passes
the generated tests on them, and fails the same tests on rules generated from a looser spec."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.generators.gen_prometheus import rules_document
from archkit.spec.model import Spec

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
needs_promtool = pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool not installed (make setup)")


def _promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, check=False)


def assert_tests_pass_and_catch(tmp_path: Path, spec: Spec, loose: Spec, name: str, alert: str) -> None:
    """`spec`'s rules pass promtool's check and its generated tests; `loose`'s rules fail those
    tests, naming `alert` (so the tests are not ones that cannot fail)."""
    files, _ = api.generate(spec, name, only=["prometheus"])
    for rel, text in files.items():
        (tmp_path / "ok" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "ok" / rel).write_text(str(text), encoding="utf-8")
    prom = tmp_path / "ok" / "prometheus"
    checked = _promtool("check", "rules", str(prom / "rules.yaml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    ok = _promtool("test", "rules", "rules.test.yaml", cwd=prom)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "loose"
    bad.mkdir()
    (bad / "rules.yaml").write_text(yaml.safe_dump(rules_document(loose)), encoding="utf-8")
    (bad / "rules.test.yaml").write_text(
        (prom / "rules.test.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    res = _promtool("test", "rules", "rules.test.yaml", cwd=bad)
    assert res.returncode == 1 and alert in res.stdout + res.stderr, res.stdout + res.stderr
