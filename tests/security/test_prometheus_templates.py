"""Spec text never runs as a Go template in Prometheus (the real promtool: check rules and test rules).

Prometheus expands an alert's labels and annotations as Go templates when the alert fires.
`promtool test rules` expands them the same way and compares the result with the expected text,
so an expected annotation equal to the spec's text as written proves that nothing in it ran.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from archkit import api
from archkit.generators.jinja import PromTemplate, prom_literal, prom_template
from tests.conftest import EXAMPLES
from tests.security.tools import PROMTOOL, load_doc, needs, promtool, write

# `query` runs PromQL from inside a template; `with` prints its body only when the query answers
EVALUATES = '{{ with query "up" }}EVALUATED {{ . }}{{ end }}'
BREAKS = "{{ x }} {{ {{ }}"  # promtool check rules: function "x" not defined, unexpected "{"


def _render(doc: dict, folder: Path) -> Path:
    spec = load_doc(doc, folder / "spec")
    files, _ = api.generate(spec, "spec.yaml", only=["prometheus"])
    return write(folder / "out", files) / "prometheus"


def _named(name: str) -> dict:
    doc = yaml.safe_load(EXAMPLES[0].read_text(encoding="utf-8"))
    for st in doc["dataflow"]["stages"]:
        st["name"] = name
    return doc


@needs(PROMTOOL)
def test_a_template_in_a_stage_name_is_shown_literally_and_never_runs(tmp_path: Path) -> None:
    out = _render(_named(EVALUATES), tmp_path)
    rules = (out / "rules.yaml").read_text(encoding="utf-8")
    tests = yaml.safe_load((out / "rules.test.yaml").read_text(encoding="utf-8"))
    expected = [
        e["exp_annotations"]["summary"]
        for t in tests["tests"]
        for r in t["alert_rule_test"]
        for e in r["exp_alerts"]
    ]
    assert any(s.startswith(EVALUATES) for s in expected), "no alert summary shows the stage name"
    # the fire cases feed an `up` series too, so an evaluated query would print EVALUATED
    for t in tests["tests"]:
        t["input_series"].append({"series": 'up{job="x"}', "values": "1+0x60"})
    (out / "rules.test.yaml").write_text(yaml.safe_dump(tests, sort_keys=False), encoding="utf-8")
    check = promtool("check", "rules", out / "rules.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    test = promtool("test", "rules", out / "rules.test.yaml")
    assert test.returncode == 0, (test.stdout + test.stderr)[-3000:]
    assert '{{ with query "up" }}' not in rules


@needs(PROMTOOL)
def test_a_broken_template_in_a_stage_name_passes_promtool_check(tmp_path: Path) -> None:
    out = _render(_named(BREAKS), tmp_path)
    check = promtool("check", "rules", out / "rules.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    test = promtool("test", "rules", out / "rules.test.yaml")
    assert test.returncode == 0, (test.stdout + test.stderr)[-3000:]


def test_prom_literal_escapes_every_action_opening() -> None:
    assert prom_literal("a {{ b }} c") == 'a {{ "{{" }} b }} c'
    assert prom_literal("{{{") == '{{ "{{" }}{'
    assert prom_literal("{ } }} $value") == "{ } }} $value"
    assert prom_literal(PromTemplate("{{ $value }}")) == "{{ $value }}"


@needs(PROMTOOL)
def test_archkit_templates_still_expand_next_to_literal_spec_text(tmp_path: Path) -> None:
    """`prom_template` keeps archkit's own `{{ $value }}`/`{{ $labels.x }}` and makes the rest literal."""
    summary = prom_template(
        "{{ name }} a{", PromTemplate("{{ $labels.stage }}"), "} at ", PromTemplate("{{ $value }}")
    )
    rules = {
        "groups": [
            {
                "name": "g",
                "rules": [
                    {
                        "alert": "High",
                        "expr": "m > 1",
                        "labels": {"tag": prom_literal("{{ $value }}")},
                        "annotations": {"summary": str(summary)},
                    }
                ],
            }
        ]
    }
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": 'm{stage="ocr"}', "values": "2+0x5"}],
                "alert_rule_test": [
                    {
                        "eval_time": "2m",
                        "alertname": "High",
                        "exp_alerts": [
                            {
                                "exp_labels": {"stage": "ocr", "tag": "{{ $value }}"},
                                "exp_annotations": {"summary": "{{ name }} a{ocr} at 2"},
                            }
                        ],
                    }
                ],
            }
        ],
    }
    write(tmp_path, {"rules.yaml": yaml.safe_dump(rules), "rules.test.yaml": yaml.safe_dump(tests)})
    check = promtool("check", "rules", tmp_path / "rules.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    test = promtool("test", "rules", tmp_path / "rules.test.yaml")
    assert test.returncode == 0, test.stdout + test.stderr
