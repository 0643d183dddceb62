"""JSON Schema export of the spec model (committed as specs/archkit.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from archkit.spec.model import Spec

SCHEMA_ID = "https://archkit.dev/schemas/archkit-v1.json"


def json_schema() -> dict[str, Any]:
    schema = Spec.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "archkit/v1 spec"
    return schema


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
