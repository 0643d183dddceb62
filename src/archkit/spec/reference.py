"""A Markdown reference of every spec object and field, generated from the model (docs/spec.md)."""

from __future__ import annotations

import typing
from enum import Enum

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from archkit.spec.model import Spec

_INTRO = """# The archkit/v1 spec — field reference

Generated from the model by `archkit schema --format markdown`; do not edit by hand.

Conventions: every number carries its unit in the key name (`p99_ms`, `gb_per_hour`,
`max_queue_delay_us`); objects that others refer to have an `id`, and references are plain
ids checked by AK103; unknown keys are errors. Editors complete and validate specs through
the JSON Schema (`specs/archkit.schema.json`), named in each spec's first line:
`# yaml-language-server: $schema=../specs/archkit.schema.json`.
"""


def _type_name(tp) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return " \\| ".join(f"`{m.value}`" for m in tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    return {str: "text", int: "integer", float: "number", bool: "boolean"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


def _models(tp, seen: list) -> None:
    origin = typing.get_origin(tp)
    if origin is not None:
        for a in typing.get_args(tp):
            _models(a, seen)
        return
    if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in seen:
        seen.append(tp)
        for f in tp.model_fields.values():
            _models(f.annotation, seen)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    seen: list = []
    _models(Spec, seen)
    out = [_INTRO]
    for cls in seen:
        doc = (cls.__doc__ or "").strip().splitlines()
        out.append(f"\n## {cls.__name__}\n")
        if doc:
            out.append(doc[0] + "\n")
        out.append("\n| key | type | default | meaning |\n|---|---|---|---|")
        for name, f in cls.model_fields.items():
            key = f.alias or name
            if f.is_required():
                default = "**required**"
            elif f.default_factory is not None:
                default = "empty"
            elif f.default is None or f.default is PydanticUndefined:
                default = "—"
            else:
                d = f.default.value if isinstance(f.default, Enum) else f.default
                default = f"`{d}`"
            meta = " ".join(str(m.description) for m in f.metadata if getattr(m, "description", None))
            desc = f.description or meta or ""
            out.append(f"| `{key}` | {_cell(_type_name(f.annotation))} | {default} | {_cell(desc)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
