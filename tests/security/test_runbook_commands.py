"""Generated runbook commands: spec values are shell-quoted, every command block parses (`bash -n`).

The commands are run by the real bash with `kubectl` and `archkit` defined as shell functions
that print their arguments: a stand-in, since no cluster can be reached here; what is checked
is how bash splits the line and that nothing from the spec runs.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from archkit import api
from tests.conftest import EXAMPLES, REFERENCE_SPECS
from tests.security.tools import BASH, bash_syntax, command_blocks, load_doc, run

HOSTILE_NAME = "api$(touch PWNED)`touch PWNED2`; touch PWNED3 #"
HOSTILE_NS = "prod && touch PWNED4 | x > y 'q' \"d\""


def _runbooks(doc: dict, folder: Path) -> dict[str, str]:
    spec = load_doc(doc, folder)
    files, _ = api.generate(spec, "spec.yaml", only=["runbooks"])
    return {k: v for k, v in files.items() if k.endswith(".md")}


def _hostile_kube(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    for svc in doc.get("topology", {}).get("services", []):
        svc["kubernetes"] = {"name": HOSTILE_NAME, "namespace": HOSTILE_NS}
    for lv in (doc.get("loadtest") or {}).get("levels", []):
        lv["id"] = lv["id"]  # ids follow the id pattern; they are quoted all the same
    return doc


def test_kubernetes_names_are_one_quoted_argument_and_never_run(tmp_path: Path) -> None:
    pages = _runbooks(_hostile_kube(EXAMPLES[0]), tmp_path / "spec")
    blocks = [b for text in pages.values() for b in command_blocks(text) if b.startswith("kubectl rollout")]
    assert blocks, "no kubectl command generated"
    for block in blocks:
        argv = shlex.split(block)
        assert argv[3] == f"deployment/{HOSTILE_NAME}" and argv[argv.index("-n") + 1] == HOSTILE_NS, argv
        work = tmp_path / "run"
        work.mkdir(exist_ok=True)
        res = run(BASH, "-c", "kubectl() { printf '%s\\n' \"$@\"; }\n" + block, cwd=work)
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines()[2] == f"deployment/{HOSTILE_NAME}", res.stdout
        assert not list(work.iterdir()), f"the spec's text ran: {sorted(p.name for p in work.iterdir())}"


def test_hostile_kubernetes_names_are_a_check_error(tmp_path: Path) -> None:
    spec = load_doc(_hostile_kube(EXAMPLES[0]), tmp_path)
    codes = [d.code for d in api.check_spec(spec) if d.code == "AK314"]
    assert codes, "AK314 did not report a name Kubernetes refuses"


@pytest.mark.parametrize("path", EXAMPLES + REFERENCE_SPECS, ids=lambda p: p.stem)
def test_every_generated_command_block_parses(path: Path, tmp_path: Path) -> None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    pages = _runbooks(doc, tmp_path / "spec")
    blocks = [b for text in pages.values() for b in command_blocks(text)]
    assert blocks, "no command block in the runbooks"
    assert bash_syntax(blocks, tmp_path / "blocks") == []
