"""One golden tree: tests/golden/<spec stem>/ mirrors what `archkit render` writes for each spec.

Every registered generator's text output is compared, path for path as render writes it, so a
new generator (or a new file of an old one) fails here until its goldens exist. Left out: the
review page (it inlines renderings and icons; tests/generators/test_review_page.py checks it)
and the SVG/PNG renderings of the diagram sources (their sources are here; the renderers'
output depends on the Graphviz and PlantUML versions). Update with
`.venv/bin/pytest tests/generators/test_golden_tree.py --update-golden` and read the diff.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT

from archkit import api
from archkit.generators import all_generators

SPECS = EXAMPLES + REFERENCE_SPECS
GOLDEN = ROOT / "tests" / "golden"
NOT_GOLDEN = {"review"}  # see the module docstring
FINDING = re.compile(r"(AK\d{3} line \d+): (?:\\.|[^|<\\])*")


def golden_files(spec_file: Path) -> dict[str, str | bytes]:
    """{path as render writes it: content} of every golden generator, no renderings."""
    res = api.load(spec_file)
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    only = [name for name in all_generators() if name not in NOT_GOLDEN]
    files, _ = api.generate(res.spec, spec_file.name, only=only, formats=())
    return stable(files)


def stable(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    """The checklist quotes other rules' messages; golden files keep their code and line only.

    (test_runbooks.py::test_checklist_page_shows_findings_from_archkit_check checks that the
    findings are there.)
    """
    out = dict(files)
    checklist = out.get("runbooks/checklist.md")
    if isinstance(checklist, str):
        out["runbooks/checklist.md"] = FINDING.sub(r"\1: …", checklist)
    return out


@pytest.mark.parametrize("spec_file", SPECS, ids=[p.stem for p in SPECS])
def test_render_output_matches_golden_tree(spec_file: Path, golden) -> None:
    golden.check_tree(GOLDEN / spec_file.stem, golden_files(spec_file))
