"""The fault-tree, calibration, OpenSLO and renderer commands' library API (`archkit.api_tools`,
re-exported by `archkit.api`): the same results and one-line errors as the CLI, without it."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from archkit import api
from archkit.spec import load_text

ROOT = Path(__file__).resolve().parents[1]
THEATRE = ROOT / "tests/faulttree/faulttrees/theatre.yaml"
SRC = ROOT / "src/archkit"


def test_fault_tree_analysis_matches_openfta_theatre() -> None:
    """OpenFTA's Theatre: exact top = 0.03 × (1 − e^−0.02 · 0.95 … ) = 2.064338e-3 (its report)."""
    (tree,) = api.fault_trees(THEATRE)
    a = api.analyse_fault_tree(tree, house={"not-in-this-tree": True})  # a switch for another tree
    g = 1 - math.exp(-0.02)
    assert a.probability == pytest.approx(0.03 * (1 - (1 - g) * (1 - 0.05)), rel=1e-12)
    assert round(a.probability, 9) == pytest.approx(2.064338e-3, abs=5e-10)
    assert sorted(sorted(cs) for cs in a.cut_sets) == [
        ["Gen_Fail", "Mains_Fail"],
        ["Mains_Fail", "Relay_Fail"],
    ]


def test_a_tree_the_spec_lacks_names_the_trees_it_has() -> None:
    with pytest.raises(
        api.InputError, match=r"no fault tree 'nope' in .*theatre.yaml; the spec has: theatre"
    ):
        api.fault_trees(THEATRE, "nope")
    with pytest.raises(api.InputError, match=r"no fault tree 'nope' in .*theatre.yaml"):
        api.export_fault_tree(THEATRE, "nope")


def test_mef_export_then_import_keeps_the_tree(tmp_path: Path) -> None:
    xml = tmp_path / "theatre.xml"
    xml.write_text(api.export_fault_tree(THEATRE, "theatre"), encoding="utf-8")
    (back,) = api.fault_trees(xml, mission_hours=1)
    (orig,) = api.fault_trees(THEATRE)
    assert {g.id: sorted(g.inputs) for g in back.gates} == {g.id: sorted(g.inputs) for g in orig.gates}
    p_back = api.analyse_fault_tree(back).probability
    assert p_back == pytest.approx(api.analyse_fault_tree(orig).probability, rel=1e-12)
    text, count = api.import_fault_trees([xml], mission_hours=1)
    assert count == 1 and text.startswith("# imported from Open-PSA MEF: theatre.xml\n")
    spec = load_text(text, "imported.yaml").spec
    assert spec is not None and [t.id for t in spec.faulttrees] == ["theatre"]


def test_mef_import_of_an_unreadable_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(api.InputError, match=r"cannot read .*gone.xml"):
        api.import_fault_trees([tmp_path / "gone.xml"])
    with pytest.raises(api.InputError, match="import needs MODEL.xml"):
        api.import_fault_trees([])


def test_slo_export_then_import_round_trips(tmp_path: Path) -> None:
    docs = tmp_path / "slos.yaml"
    docs.write_text(api.slo_export(ROOT / "examples/rag-chat.yaml"), encoding="utf-8")
    heard: list[tuple[Path, str]] = []
    fragment = api.slo_import([docs], lambda f, n: heard.append((f, n)))
    assert fragment.lstrip().startswith(("slos:", "#")) and "slos:" in fragment
    assert all(f == docs for f, _ in heard)
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(api.InputError, match="no OpenSLO SLO documents found"):
        api.slo_import([empty])


def test_calibrate_refuses_before_measuring(tmp_path: Path) -> None:
    """Errors that need no Triton: an unknown environment, an output that is not a calibration
    (left as it was)."""
    spec = ROOT / "examples/rag-chat.yaml"
    with pytest.raises(api.InputError, match="environment 'nowhere' is not defined"):
        api.calibrate(spec, api.CalibrationOptions(env="nowhere"))
    foreign = tmp_path / "mine.json"
    foreign.write_text('{"not": "a calibration"}', encoding="utf-8")
    with pytest.raises(api.InputError, match="is not an archkit calibration file: not overwritten"):
        api.calibrate(spec, api.CalibrationOptions(output=foreign))
    assert foreign.read_text(encoding="utf-8") == '{"not": "a calibration"}'


JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"


@pytest.mark.skipif(not JAR.is_file(), reason="needs the pinned jar (make setup)")
def test_renderers_install_from_a_local_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned jar (SHA-256 checked) lands in the user cache, and `plantuml_jar` names it."""
    with pytest.raises(api.InputError, match=r"--from: .*gone.jar: no such file"):
        api.install_renderers(tmp_path / "gone.jar")
    monkeypatch.delenv("ARCHKIT_PLANTUML_JAR", raising=False)
    monkeypatch.setenv("ARCHKIT_CACHE_DIR", str(tmp_path / "cache"))
    res, missing = api.install_renderers(JAR)
    assert res.jar.is_file() and res.jar.is_relative_to(tmp_path / "cache")
    assert res.jar.read_bytes() == JAR.read_bytes()
    assert all(isinstance(what, str) and how for what, how in missing)
    again, _ = api.install_renderers(JAR)
    assert again.action == "already installed"
    monkeypatch.setenv("ARCHKIT_PLANTUML_JAR", str(res.jar))
    assert api.plantuml_jar() == res.jar


COMMANDS = sorted(p.name for p in (SRC / "cli").glob("cmd_*.py"))
# What every command may import besides `archkit.api`: the CLI itself, the errors it maps to exit
# codes, the diagnostics it prints and the atomic writer of `-o` files.
CLI_BASE = {"archkit", "archkit.api", "archkit.errors", "archkit.diagnostics", "archkit.atomic"}
# What a command may also import to *show* or *parse* (never to do the work): each entry says why.
PRESENTATION: dict[str, set[str]] = {
    # `--rate` parsed into rates; a finding's spec path turned into line:col for the message
    "cmd_capacity.py": {"archkit.perf.curve", "archkit.spec.sourcemap"},
    # the api's load-test result printed: verdict type, pass/inconclusive, JSON, SARIF, predictions
    "cmd_loadtest.py": {
        "archkit.loadtest.judge",
        "archkit.loadtest.report",
        "archkit.loadtest.results",
        "archkit.loadtest.compare",
        "archkit.loadtest.k6",
    },
    "cmd_runbook.py": {"archkit.runbook.terminal"},  # what a terminal may be shown of a step
    # the api's report printed (text, JSON, JUnit, SARIF); the options each source declares
    "cmd_verify.py": {"archkit.verify", "archkit.verify.registry"},
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_goes_through_the_api(name: str) -> None:
    """The CLI parses and prints; the work is `archkit.api`'s (issue 27): a command imports nothing
    else from archkit but what it shows a result with (`PRESENTATION`)."""
    tree = ast.parse((SRC / "cli" / name).read_text(encoding="utf-8"))
    used = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("archkit"):
            for a in n.names:  # `from archkit.loadtest import judge` imports the module judge
                sub = SRC.joinpath(*n.module.split(".")[1:], a.name)
                module = sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file()
                used.add(f"{n.module}.{a.name}" if module else n.module)
    used = {m for m in used if m != "archkit.cli" and not m.startswith("archkit.cli.")}
    assert used - CLI_BASE - PRESENTATION.get(name, set()) == set()
