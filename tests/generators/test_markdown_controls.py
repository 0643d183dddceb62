"""Control, bidi and invisible characters from a spec never reach a Markdown page raw.

Every free-text field of each example (found by walking the model: tests/security/fields.py)
gets an ANSI colour sequence, a bell, a right-to-left override and a zero-width space; every
Markdown page the runbooks generator writes (runbooks/*.md, alerts.md, checklist.md,
onboarding/*.md) must show them escaped, as `archkit runbook` shows them on a terminal.
"""

from __future__ import annotations

import copy

import pytest
import yaml
from tests.conftest import EXAMPLES
from tests.security.fields import put, text_fields

from archkit import api
from archkit.runbook.terminal import has_hidden
from archkit.spec import load_file

PROBE = "\x1b[31mred\x1b[0m\x07\u202eevil\u200b"


@pytest.mark.parametrize("example", [p for p in EXAMPLES if p.suffix == ".yaml"], ids=lambda p: p.stem)
def test_markdown_pages_show_control_characters_escaped(example, tmp_path) -> None:
    doc, paths = text_fields(str(example))
    doc = copy.deepcopy(doc)
    for i, path in enumerate(paths):
        put(doc, path, f"{PROBE}{i}")
    spec_file = tmp_path / example.name
    spec_file.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    loaded = load_file(spec_file)
    assert loaded.spec is not None, [d.text() for d in loaded.diagnostics][:3]
    files, _ = api.generate(loaded.spec, spec_file.name, only=["runbooks"])
    pages = {k: v for k, v in files.items() if k.endswith(".md")}
    assert {"runbooks/alerts.md", "runbooks/checklist.md"} <= set(pages)
    for name, text in pages.items():
        assert isinstance(text, str)
        assert not has_hidden(text, keep="\n\t"), name
    assert any("\\x1b[31mred" in text for text in pages.values())  # shown, escaped, not dropped
