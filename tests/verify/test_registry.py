"""The verify source registry: every code declared once next to its check, docs generated from it,
and a new source is one module (shown with a test-sized source registered here)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from archkit import api
from archkit.spec import load_file
from archkit.verify import Status
from archkit.verify.catalogue import update
from archkit.verify.findings import Recorder
from archkit.verify.registry import (
    Check,
    Code,
    DocRow,
    DuplicateCodeError,
    Option,
    Providers,
    Reading,
    Source,
    all_codes,
    register_source,
    sources,
    unregister_source,
)
from archkit.verify.report import to_sarif, to_text
from archkit.verify.state import load_snapshot
from tests.conftest import ROOT
from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC
from tests.verify.inputs import run

REGENERATE = ".venv/bin/python -m archkit.verify.catalogue docs/verify.md"
FIX = ROOT / "tests" / "verify" / "fixtures" / "industrial-inspection"


def test_docs_verify_md_is_current():
    committed = (ROOT / "docs" / "verify.md").read_text(encoding="utf-8")
    assert committed == update(committed), f"docs/verify.md is stale; regenerate it with: {REGENERATE}"


def test_builtin_sources_in_report_order_each_code_complete():
    assert [s.name for s in sources()][:3] == ["kube", "triton", "prometheus"]
    codes = all_codes()
    assert (
        len(codes) == 67
    )  # VP320: latency SLO thresholds; VC410-VC414: control-flow code; VS510-511: store; VL4xx: llama.cpp;
    # VK122: NVIDIA env; VT229: repository file hash; VM240-241: served model hashes; VT239: backend
    for cid, (code, area) in codes.items():
        src = next(s for s in sources() if s.name == area)
        assert cid.startswith(src.prefix), cid
        assert code.title and code.rationale.endswith("."), cid
        assert code.source, f"{cid} does not say where it comes from"
    for src in sources():
        assert src.options and src.docs, src.name
        for chk in src.checks:
            assert chk.__doc__, f"{chk.__name__} has no summary"


def _emitted(findings: list) -> set[str]:
    return {f.code for f in findings}


def test_every_code_a_drifting_cluster_reports_is_registered(tmp_path):
    from tests.verify.conftest import Cluster

    cluster = Cluster(tmp_path)
    spec = cluster.spec
    for o in cluster.objs:  # break a bit of everything
        if o["kind"] == "Deployment":
            c = o["spec"]["template"]["spec"]["containers"][0]
            c["image"] = "wrong:1"
            c.pop("livenessProbe", None)
            c.pop("ports", None)
            o["spec"]["replicas"] = 7
    report = cluster.snapshot()
    assert report.total(Status.DRIFT) > 10
    assert _emitted(report.findings) <= set(all_codes())
    assert run(spec, load_snapshot(FIX / "snapshot.yaml")).total(Status.DRIFT) == 0


def test_a_source_cannot_reuse_a_code_or_a_name():
    class Clash(Check):
        code = Code("VK101", "again", "Reused.", "test")

    with pytest.raises(DuplicateCodeError):

        @register_source
        class Other(Source):
            name, title, prefix, checks = "other", "Other", "VK", (Clash,)

    with pytest.raises(ValueError, match="malformed"):

        @register_source
        class Bad(Source):
            name, title, prefix, checks = "bad", "Bad", "VQ", (Clash,)

    assert "other" not in {s.name for s in sources()}


# ------------------------------------------------------------------ a test-sized source


class OwnersListed(Check):
    """Every owner of the spec is in the directory."""

    code = Code("VX901", "owner known", "An alert nobody can be paged for is noise.", "this test")


class DirectorySource(Source):
    """A people directory (a file of names) holding the spec's owners."""

    name = "directory"
    title = "Directory"
    prefix = "VX"
    options = (Option("directory", "A file of known people, one per line.", Path),)
    docs = (DocRow("`--directory FILE`", "a list of people", "every metadata.owners entry must be in it."),)
    checks = (OwnersListed,)

    def read(self, spec: Any, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return set(Path(options["directory"]).read_text(encoding="utf-8").split())

    def check(self, spec: Any, given: Any, timeout_s: float) -> Reading:
        rec = Recorder(spec, self.name)
        for owner in spec.metadata.owners:
            if owner in given:
                rec.ok(OwnersListed.code, f"owner/{owner}", spec.metadata, "in the directory", field="owners")
            else:
                rec.drift(
                    OwnersListed.code,
                    f"owner/{owner}",
                    spec.metadata,
                    f"'{owner}' is not in the directory",
                    field="owners",
                )
        return Reading({"area": self.name, "source": "directory"}, rec.findings)


@pytest.fixture
def directory_source() -> Iterator[type[Source]]:
    register_source(DirectorySource)
    try:
        yield DirectorySource
    finally:
        unregister_source(DirectorySource.name)


def test_adding_a_source_is_one_module(directory_source, tmp_path):
    people = tmp_path / "people.txt"
    owners = load_file(INDUSTRIAL_SPEC).spec.metadata.owners
    people.write_text(owners[0] + "\n", encoding="utf-8")
    # the api passes the new source's option through, and the report, explain and docs know it
    report = api.verify(INDUSTRIAL_SPEC, directory=people).report
    assert [s["area"] for s in report.sources] == ["directory"]
    assert report.findings[0].status is Status.PASS and report.findings[0].title == "owner known"
    assert "directory: 1 pass" in to_text(report)
    assert api.explain("VX901").startswith("VX901 owner known (verify, directory)")
    docs = update((ROOT / "docs" / "verify.md").read_text(encoding="utf-8"))
    assert "| VX901 | owner known |" in docs and "| `--directory FILE` |" in docs
    # the CLI gains --directory from the registry
    from archkit.cli.cmd_verify import verify, with_source_options

    cli = typer.Typer()
    cli.command(name="verify")(with_source_options(verify))
    cli.command(name="noop")(lambda: None)
    res = CliRunner().invoke(cli, ["verify", str(INDUSTRIAL_SPEC), "--directory", str(people), "-f", "json"])
    assert res.exit_code == (1 if len(owners) > 1 else 0), res.output
    assert {f["code"] for f in json.loads(res.output)["findings"]} == {"VX901"}
    assert "directory" in inspect.signature(with_source_options(verify)).parameters


def test_sarif_for_verify_findings(tmp_path):
    from tests.verify.conftest import Cluster

    cluster = Cluster(tmp_path)
    for o in cluster.objs:
        if o["kind"] == "Deployment" and o["metadata"]["name"] == "triton":
            o["spec"]["replicas"] = 3
    report = cluster.snapshot()
    log = json.loads(to_sarif(report, "0.0"))
    run_ = log["runs"][0]
    rules = {r["id"]: r for r in run_["tool"]["driver"]["rules"]}
    assert set(rules) == set(all_codes())
    assert rules["VK111"]["help"]["text"].startswith("VK111 replicas (verify, kube)")
    (result,) = [r for r in run_["results"] if r["ruleId"] == "VK111"]
    assert result["level"] == "error" and result["kind"] == "fail"
    loc = result["locations"][0]["physicalLocation"]
    lines = Path(loc["artifactLocation"]["uri"]).read_text(encoding="utf-8").splitlines()
    assert lines[loc["region"]["startLine"] - 1].strip() == "replicas: 2"
    assert run_["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == "VK111"
    assert all(r["level"] in ("error", "note") for r in run_["results"])  # passes are left out


def test_a_source_from_another_package_loads_through_its_entry_point():
    import sys
    from importlib.metadata import EntryPoint

    from archkit.verify.registry import ENTRY_POINTS, load_plugins, source

    plugin = "tests.verify.plugin_source"
    ep = EntryPoint("notes", f"{plugin}:NotesSource", ENTRY_POINTS)
    try:
        load_plugins([ep])
        assert source("notes") is not None and all_codes()["VY901"][1] == "notes"
        assert api.explain("VY901").startswith("VY901 notes present (verify, notes)")
    finally:
        unregister_source("notes")
        sys.modules.pop(plugin, None)
    assert source("notes") is None


def test_a_check_names_its_code_through_its_class_never_a_literal():
    """A verify code id is spelled once, in its `Code(...)`; findings reach it as `self.code`
    (or a named `also` code), so renaming or moving a code cannot leave a stale literal behind."""
    import ast

    import archkit.verify

    root = Path(archkit.verify.__file__).parent
    pattern = re.compile(r"^V[A-Z][0-9]{3}$")
    stray = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        declared = {
            id(node.args[0])
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Code" and node.args
        }
        stray += [
            f"{path.name}:{node.lineno}: {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and pattern.match(node.value)
            and id(node) not in declared
        ]
    assert not stray, "verify codes spelled outside their Code(...):\n" + "\n".join(stray)


def test_a_source_whose_checks_raise_is_an_unknown_finding_not_a_crash(directory_source):
    """The same isolation as a broken rule (AK199) or generator: the run reports, not crashes."""
    from archkit.verify import run_inputs

    spec = load_file(INDUSTRIAL_SPEC).spec

    class Exploding(DirectorySource):
        def check(self, spec: Any, given: Any, timeout_s: float) -> Reading:
            raise KeyError("a bug in a plug-in")

    unregister_source(DirectorySource.name)
    register_source(Exploding)
    report = run_inputs(spec, {"directory": set()})
    broken = [f for f in report.findings if f.area == "directory"]
    assert [(f.code, f.status.value, f.message) for f in broken] == [
        ("VX901", "unknown", "internal error in verify source directory: KeyError: 'a bug in a plug-in'")
    ]
    assert report.sources[0]["error"].startswith("internal error")
