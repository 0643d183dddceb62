"""The committed JSON Schema is current, and every example validates against it."""

from __future__ import annotations

import json

import jsonschema
import yaml

from archkit.spec.schema import schema_text
from tests.conftest import EXAMPLES, REFERENCE_SPECS, ROOT

SCHEMA_FILE = ROOT / "specs" / "archkit.schema.json"


def test_committed_schema_is_current():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "specs/archkit.schema.json is stale; regenerate with: "
        ".venv/bin/archkit schema -o specs/archkit.schema.json"
    )


def test_examples_validate_against_the_json_schema():
    schema = json.loads(SCHEMA_FILE.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for path in EXAMPLES + REFERENCE_SPECS:
        errors = sorted(validator.iter_errors(yaml.safe_load(path.read_text())), key=str)
        assert not errors, f"{path.name}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_every_spec_file_starts_with_the_schema_comment():
    for path in EXAMPLES + REFERENCE_SPECS:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        target = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert target == SCHEMA_FILE.resolve(), f"{path.name} points at {target}"


def test_schema_rejects_what_the_model_rejects():
    schema = json.loads(SCHEMA_FILE.read_text())
    bad = {"apiVersion": "archkit/v1", "metadata": {"name": "t"}, "budgets": {"p99_msec": 3}}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))


def test_committed_field_reference_is_current():
    from archkit.spec.reference import markdown

    assert (ROOT / "docs" / "spec.md").read_text(encoding="utf-8") == markdown(), (
        "docs/spec.md is stale; regenerate with: .venv/bin/archkit schema --format markdown -o docs/spec.md"
    )
