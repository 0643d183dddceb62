"""Hostile strings in every free-text field of a spec, through every tool that reads the output.

The fields come from walking the model (tests/security/fields.py); each gets a string built
from Go templates, shell metacharacters, control and bidi characters, PlantUML directives,
`</script>`, YAML/Markdown breakers, quotes, backslashes and newlines. Then the real consumers:
PlantUML and dot (render raises on any diagram error), promtool check rules AND test rules
(the expected annotations are the text as written, so a template that ran fails the test),
`python -c "import locustfile"`, `bash -n` on every generated shell block, and Chromium on
review.html (nothing that can run: no script, handler attribute, frame, request or console
error). The tool runs are batched: every spec of one example goes through one promtool call,
one Python and one browser. `make test` runs one example of three specs (35 s at load 8 on
2 cores); `--hypothesis-profile=fuzz` runs 40 (120 specs).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from archkit import api
from archkit.runbook.terminal import shown
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT
from tests.security.chromium import CHROMIUM, browser
from tests.security.fields import Path_, path_text, put, text_fields
from tests.security.tools import PROMTOOL, bash_syntax, command_blocks, promtool, run, write

HOSTILE = [
    '{{ with query "up" }}PWNED{{ end }}',
    "{{ $value }}",
    "{{",
    "}}",
    "$(touch PWNED)",
    "`touch PWNED`",
    "; touch PWNED #",
    "&& touch PWNED",
    "| tee PWNED",
    "> PWNED",
    "'",
    '"',
    "\\",
    "\\n",
    "\n",
    "\r\n",
    "\t",
    "\x1b[31m",
    "\x07",
    "\x00",
    "\u202e",
    "\u2066",
    "\u200b",
    "\ufeff",
    "!include /etc/passwd",
    '%getenv("HOME")',
    "%date()",
    "@enduml",
    "@startuml",
    "end note",
    "-->",
    "<script>window.__pwned=1</script>",
    "</script>",
    '<img src=x onerror="window.__pwned=1">',
    "javascript:alert(1)",
    "<!--",
    "&amp;",
    "---",
    "...",
    ": ",
    "- ",
    "#",
    "&a *a",
    "!!python/object:os.system",
    "```",
    "~~~",
    "[x](javascript:alert(1))",
    "| a | b |",
    "<<",
    "%{http_code}",
    "ünïcödé 中文 🚀",
    "[[",
    "]]",
    "{",
    "}",
]
fragment = st.one_of(
    st.sampled_from(HOSTILE), st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6)
)
hostile = st.lists(fragment, min_size=1, max_size=4).map("".join).filter(lambda s: s.strip() != "")

BASES = [p for p in EXAMPLES + REFERENCE_SPECS if p.suffix == ".yaml"]
JAR = ROOT / ".cache" / "plantuml" / "plantuml-1.2026.8.jar"
VARIANTS = 3  # specs per example: they share one promtool, one Python and one browser run
FUZZ = settings.get_current_profile_name() == "fuzz"  # the long run (tests/conftest.py)
EXAMPLES_N = 40 if FUZZ else 1  # 3 specs in make test (each with 140-300 hostile fields)

missing = [t for t in (PROMTOOL, CHROMIUM, str(JAR)) if not Path(t).exists()]
pytestmark = [
    pytest.mark.skipif(bool(missing), reason=f"not installed: {missing} (make setup)"),
    # AK109 compiles each expect_regex to report a bad one; `[[` in it draws Python's FutureWarning
    pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning"),
]


def _is_command(path: Path_) -> bool:
    """Fields the spec declares as commands, run or shown exactly as written (the user's shell)."""
    last = str(path[-1])
    return last == "check" or last.endswith("command")


def _variant(data: st.DataObject, work: Path) -> tuple[dict[str, Any], dict[str, str]]:
    base = data.draw(st.sampled_from(BASES), label="base spec")
    doc, paths = text_fields(str(base))
    doc = copy.deepcopy(doc)
    values: dict[str, str] = {}
    for i, p in enumerate(paths):
        v = data.draw(hostile, label=path_text(p))
        # distinct values: two metrics of one stage with one name would be one series (the
        # failure ratio of errors/requests = 1 fires always); the tag alternates ends so both
        # a hostile start and a hostile end reach the consumers
        v = f"{v}·{i}" if i % 2 else f"{i}·{v}"
        values[path_text(p)] = v
        put(doc, p, v)
    return doc, {k: v for k, v in values.items() if _is_command(tuple(k.split(".")))}


IMPORT_ALL = """
import importlib, sys
for folder in sys.argv[1:]:
    sys.path.insert(0, folder)
    sys.modules.pop("locustfile", None)
    importlib.import_module("locustfile")
    sys.path.remove(folder)
"""


@settings(
    max_examples=EXAMPLES_N,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate] if not FUZZ else [Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_hostile_strings_stay_inert_in_every_consumer(data: st.DataObject, tmp_path_factory: Any) -> None:
    work = tmp_path_factory.mktemp("hostile")
    outs: list[tuple[Path, dict[str, str]]] = []
    for i in range(VARIANTS):
        doc, commands = _variant(data, work)
        folder = work / f"v{i}"
        folder.mkdir()
        spec_file = folder / "spec.yaml"
        spec_file.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
        res = api.load(spec_file)
        assert res.spec is not None, [d.text() for d in res.diagnostics][:5]
        # PlantUML and dot run here (one JVM for the PlantUML sources): any diagram error raises
        files, _ = api.generate(res.spec, "spec.yaml")
        outs.append((write(folder / "out", files), commands))

    for o, _ in outs:  # Grafana dashboards and other JSON: well-formed whatever the spec says
        for f in sorted(o.rglob("*.json")):
            json.loads(f.read_text(encoding="utf-8"))
    check = promtool("check", "rules", *[o / "prometheus" / "rules.yaml" for o, _ in outs])
    assert check.returncode == 0, (check.stdout + check.stderr)[-3000:]
    test = promtool("test", "rules", *[o / "prometheus" / "rules.test.yaml" for o, _ in outs])
    assert test.returncode == 0, (test.stdout + test.stderr)[-3000:]

    locust_dirs = [str(p.parent) for o, _ in outs for p in sorted(o.rglob("locustfile.py"))]
    assert locust_dirs
    imported = run(sys.executable, "-c", IMPORT_ALL, *locust_dirs, cwd=work)
    assert imported.returncode == 0, imported.stderr[-3000:]

    for o, commands in outs:
        blocks = [b for md in sorted(o.rglob("*.md")) for b in command_blocks(md.read_text(encoding="utf-8"))]
        # shown with control characters escaped, as the terminal shows them (archkit.runbook.terminal)
        declared = {shown(v.replace("\r", ""), keep="\n\t") for v in commands.values()}
        # a declared command is the user's own shell text, shown exactly; everything archkit builds parses
        generated = [b for b in blocks if b.rstrip("\n") not in {d.rstrip("\n") for d in declared}]
        assert bash_syntax(generated, o / "bash") == []
        assert not list(work.rglob("PWNED*")), "a hostile command ran"

    with browser(work / "chromium") as b:
        for o, _ in outs:
            page = o / "review.html"
            found, events = b.visit(page)
            assert found == {"scripts": 0, "frames": 0, "handlers": [], "js_urls": [], "pwned": False}, found
            bad = [
                e
                for e in events
                if e.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown")
                or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
            ]
            assert not bad, bad[:3]
            urls = [
                e["params"]["request"]["url"]
                for e in events
                if e.get("method") == "Network.requestWillBeSent"
            ]
            assert all(u == page.as_uri() or u.startswith("data:") for u in urls), urls
