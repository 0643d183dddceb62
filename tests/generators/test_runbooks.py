"""Runbooks, alert index, checklist and onboarding pages: golden files and links that resolve."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT

from archkit import api
from archkit.checks import all_rules
from archkit.diagnostics import Diagnostic, Severity
from archkit.generators.gen_runbooks import CHECKLIST, checklist_rows, code, fence
from archkit.spec.model import Spec

SPECS = EXAMPLES + [p for p in REFERENCE_SPECS if p.name == "ocr-reference.yaml"]
ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _spec(path: Path) -> Spec:
    res = api.load(path)
    assert res.spec is not None, res.diagnostics
    return res.spec


def _generate(path: Path) -> dict[str, str]:
    files, _ = api.generate(_spec(path), path.name, only=["runbooks", "prometheus", "faulttree"])
    return files


def _anchors(files: dict[str, str]) -> dict[str, set[str]]:
    return {rel: set(ANCHOR.findall(text)) for rel, text in files.items() if rel.endswith(".md")}


def _resolve(anchors: dict[str, set[str]], target: str) -> bool:
    path, _, frag = target.partition("#")
    return path in anchors and (not frag or frag in anchors[path])


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_runbook_url_resolves_to_an_anchor(path):
    files = _generate(path)
    anchors = _anchors(files)
    rules = yaml.safe_load(files["prometheus/rules.yaml"])
    urls = [r["annotations"]["runbook_url"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
    assert urls
    for url in urls:
        assert _resolve(anchors, url), url


def test_runbook_urls_use_the_base_url_when_set():
    spec = _spec(ROOT / "examples" / "recommendation.yaml")
    # the base is where the render output folder is published: the URL's path is the tree's
    spec.metadata.links["runbook_base_url"] = "https://wiki.example/ai/"
    files, _ = api.generate(spec, "recommendation.yaml", only=["runbooks", "prometheus"])
    anchors = _anchors(files)
    rules = yaml.safe_load(files["prometheus/rules.yaml"])
    for g in rules["groups"]:
        for r in g["rules"]:
            if "alert" in r:
                url = urlsplit(r["annotations"]["runbook_url"])
                assert (url.scheme, url.netloc) == ("https", "wiki.example")
                assert url.path.startswith("/ai/runbooks/"), url
                rel = url.path.removeprefix("/ai/")
                assert _resolve(anchors, f"{rel}#{url.fragment}"), r["annotations"]["runbook_url"]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_every_markdown_link_between_pages_resolves(path):
    files = _generate(path)
    anchors = _anchors(files)
    for rel, text in files.items():
        if not rel.endswith(".md"):
            continue
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+://", target):
                continue
            if target.endswith(".svg"):  # the embedded fault-tree diagram: its source is generated
                dot = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))[: -len(".svg")]
                assert f"{dot}.dot" in files, f"{rel}: {target}"
                continue
            if target.startswith("#"):
                full = f"{rel}{target}"
            else:
                p, _, frag = target.partition("#")
                full = posixpath.normpath(posixpath.join(posixpath.dirname(rel), p)) + (
                    f"#{frag}" if frag else ""
                )
            assert _resolve(anchors, full), f"{rel}: {target}"


def test_tree_runbook_orders_checks_and_anchors_every_event():
    files = _generate(ROOT / "examples" / "industrial-inspection.yaml")
    text = files["runbooks/triton-unavailable.md"]
    order = re.findall(r'<a id="check-([^"]+)"></a>', text)
    # FV importance per second of check (no cost_s declared: equal cost) → most probable first
    assert order == ["not-ready", "gpu-oom", "gpu-gone"]
    assert "curl -s -o /dev/null -w '%{http_code}' http://localhost:8000/v2/health/ready" in text
    assert '<a id="escalation"></a>' in text and "Single points of failure" in text


def test_checklist_has_every_pitfall_and_reads_check_findings():
    titles = {line.source for line in CHECKLIST}
    assert {f"seed 000 §5.{i}" for i in range(1, 13)} <= titles
    assert {f"seed 004 §4.{i}" for i in range(1, 6)} <= titles
    spec = _spec(ROOT / "examples" / "industrial-inspection.yaml")
    registered = set(all_rules())
    finding = Diagnostic("AK309", Severity.ERROR, "service 'x' allows 1024 open files", "s.yaml", 7, 3)
    rows = {r["line"].key: r for r in checklist_rows(spec, [finding], registered)}
    assert rows["file-handles"]["status"] == "✗" and rows["file-handles"]["findings"] == [finding]
    assert rows["mtu"]["status"] == ("✓" if "AK308" in registered else "not checked")
    assert rows["dns"]["status"] == ("✓" if "AK323" in registered else "not checked")
    assert rows["memory-leak"]["status"] == ("✓" if "AK616" in registered else "not checked")
    # a line whose rules are not registered is "not checked", never ✓
    rows = {r["line"].key: r for r in checklist_rows(spec, [], set())}
    assert {r["status"] for r in rows.values()} == {"not checked"}
    # a rule the spec ignores does not tick its line
    spec.checks.ignore = ["AK308"]
    rows = {r["line"].key: r for r in checklist_rows(spec, [], registered)}
    assert rows["mtu"]["status"] == "not checked"


def test_checklist_page_shows_findings_from_archkit_check():
    files = _generate(ROOT / "examples" / "recommendation.yaml")
    diags = api.check([ROOT / "examples" / "recommendation.yaml"]).diagnostics
    page = files["runbooks/checklist.md"]
    for d in diags:
        if any(d.code in line.codes for line in CHECKLIST) and d.severity is not Severity.INFO:
            assert f"{d.code} line {d.line}" in page


def test_onboarding_page_covers_deploy_rollback_verify_metrics_logs_loadtest():
    files = _generate(ROOT / "examples" / "industrial-inspection.yaml")
    page = files["runbooks/onboarding/triton.md"]
    for heading in (
        "## Deploy",
        "## Roll back",
        "## Verify after a rollback",
        "## Metrics",
        "## Logs",
        "## Load test",
        "## When it breaks",
    ):
        assert heading in page
    assert "python verify_model.py --model v1 --input golden/" in page  # golden set (seed 000 §5.12)
    assert "/v2/models/yolov8-defect/ready" in page  # model loaded
    assert "`Failed to load model`" in page and "`CUDA out of memory`" in page  # log keywords
    assert "archkit loadtest industrial-inspection.yaml --level baseline" in page
    assert "`nv_inference_request_duration_us`" in page


def test_markdown_helpers_keep_user_text_inert():
    assert fence("echo ```; rm -rf x") == "````\necho ```; rm -rf x\n````"
    assert code("a`b") == "``a`b``" and code("`x`") == "`` `x` ``"


def test_a_tree_that_cannot_be_analysed_still_gets_its_runbook():
    spec = Spec.model_validate(
        {
            "apiVersion": "archkit/v1",
            "metadata": {"name": "edge"},
            "faulttrees": [
                {
                    "id": "loop",
                    "top": "g1",
                    "gates": [
                        {"id": "g1", "type": "or", "inputs": ["g2", "a"]},
                        {"id": "g2", "type": "and", "inputs": ["g1", "a"]},
                    ],
                    "events": [{"id": "a", "check": "true", "expect_exit_code": 0}],
                }
            ],
        }
    )
    files, _ = api.generate(spec, "edge.yaml", only=["runbooks", "prometheus"])
    page = files["runbooks/loop.md"]
    assert "The tree cannot be analysed:" in page and "cycle g1 -\\> g2 -\\> g1" in page
    assert '<a id="check-a"></a>' in page
    assert yaml.safe_load(files["prometheus/rules.yaml"]) == {"groups": []}


def test_an_and_gated_event_names_the_events_it_needs_and_checks_come_first():
    text = _generate(ROOT / "examples" / "loan-preapproval.yaml")["runbooks/preapproval-failing.md"]
    section = text.split('<a id="check-breaker-stuck"></a>')[1].split("<a id=")[0]
    # an input of the AND gate causes the top event only with the other input failed too
    assert "only together with [Registry API times out](#check-registry-timeout)" in section
    assert "this event is the cause." not in section
    ocr = text.split('<a id="check-ocr-down"></a>')[1].split("<a id=")[0]
    assert "this event is the cause." in ocr  # a cut set of order one
    # the checks before any probability; the diagram embedded; remedies fenced for a shell
    assert text.index('<a id="checks"></a>') < text.index("Top-event probability")
    assert "![fault tree preapproval-failing](../faulttree/preapproval-failing.svg)" in text
    assert "**Remedy:**\n\n```" in text


def test_paging_policy_pages_only_for_burn_effective_qps_and_service_down():
    spec = _spec(ROOT / "examples" / "recommendation.yaml")
    files, _ = api.generate(spec, "recommendation.yaml", only=["prometheus"])
    rules = yaml.safe_load(files["prometheus/rules.yaml"])
    alerts = [r for g in rules["groups"] for r in g["rules"] if "alert" in r]
    pages = sorted(r["alert"] for r in alerts if r["labels"]["severity"] == "page")
    allowed = re.compile(r"ErrorBudgetBurn(Fast|Medium)$|^EffectiveQpsLow$|Down$")
    assert pages and all(allowed.search(p) for p in pages), pages
    assert "EffectiveQpsLow" in pages and any(p.endswith("BurnFast") for p in pages), pages
    assert all(r["annotations"]["dashboard"] == "https://grafana.example.com/d/reco" for r in alerts)
    # a stage can ask for pages on its own budget alerts
    spec.dataflow.stages[0].budget_alert = "page"
    files, _ = api.generate(spec, "recommendation.yaml", only=["prometheus"])
    rules = yaml.safe_load(files["prometheus/rules.yaml"])
    paged = {
        r["alert"]
        for g in rules["groups"]
        for r in g["rules"]
        if r.get("labels", {}).get("severity") == "page"
    }
    assert "GatewayLatencyAboveBudget" in paged


def test_a_wide_and_gate_names_a_bounded_number_of_partners():
    """Fuzz batch 30 (issue 28): an AND of ~300 events made every cause text name 5 combinations
    of ~250 events each: 1.6 M links, 47 MB of runbooks and 473 MB in `render`. An AND of 20
    events: each cause names SHOWN_PARTNERS (8) of the 19 others, then "and 11 more"; by hand."""
    from archkit.generators.runbook_causes import SHOWN_PARTNERS
    from archkit.spec import load_text

    ids = [f"e{i:02d}" for i in range(20)]
    events = "".join(f"      - {{id: {x}, check: 'true', expect: '', probability: 0.01}}\n" for x in ids)
    text = (
        "apiVersion: archkit/v1\nmetadata: {name: wide}\nfaulttrees:\n  - id: wide\n    top: top\n"
        f"    gates:\n      - {{id: top, type: and, inputs: [{', '.join(ids)}]}}\n    events:\n{events}"
    )
    spec = load_text(text, "wide.yaml").spec
    assert spec is not None
    files, _ = api.generate(spec, "wide.yaml", only=["runbooks"])
    page = files["runbooks/wide.md"]
    cause = page.split('<a id="check-e00"></a>')[1].split("<a id=")[0]
    assert SHOWN_PARTNERS == 8
    assert cause.count("](#check-e") == 8 and "and 11 more events of that cut set" in cause
    assert "[e08](#check-e08)" in cause and "[e09](#check-e09)" not in cause
