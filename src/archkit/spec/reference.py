"""A Markdown reference of every spec object and field, generated from the model (docs/spec.md)."""

from __future__ import annotations

import typing
from enum import Enum
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from archkit.spec.model import Spec
from archkit.spec.refs import class_refs

_INTRO = """# The archkit/v1 spec — field reference

Generated from the model by `archkit schema --format markdown`; do not edit by hand.

Conventions: every number carries its unit in the key name (`p99_ms`, `gb_per_hour`,
`max_queue_delay_us`); objects that others refer to have an `id`, and references are plain
ids checked by AK103 (the meaning column says what each one must name); unknown keys are
errors. Editors complete and validate specs through the JSON Schema
(`specs/archkit.schema.json`), named in each spec's first line:
`# yaml-language-server: $schema=../specs/archkit.schema.json`.

## How a spec file is read

- **Plain data, YAML 1.2 core schema.** A plain scalar is a number only when it is written as
  one (`42`, `-3`, `0o17`, `0x1F`, `1.5`, `1e3`), a boolean only as `true`/`false`, null only as
  `null`/`~`/nothing; everything else is text. YAML 1.1's extras stay text: `yes`, `on`,
  `1:30`, `1_000`, and dates such as `2024-01-01` (the spec has no date fields, so a date is
  never half-built into an object and a `2024-13-01` is just the text you wrote).
- **Tags.** The core tags `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!map` and `!!seq`
  are accepted, each only on its own node kind (`!!map` on a mapping, `!!seq` on a sequence,
  the others on scalars). A tagged scalar is resolved by archkit's own code against the same
  core-schema patterns, so `!!int abc` or `!!bool maybe` is an error at its line and column
  (AK100), never an exception from the YAML library. Every other tag is refused: `!!timestamp`
  (no date fields), `!!binary`, `!!set`, `!!omap`, `!!python/...` and local tags such as `!x`;
  so are merge keys (`<<`). Accepting tags would let a file build objects, which a spec never
  needs.
- **Numbers.** A number written with more than 50 characters is refused before it is converted
  (a double has 17 significant digits; the limit keeps clear of Python's 4,300-digit
  int-to-text limit). `.inf`, `.nan` and overflowing literals such as `1e999` are refused
  wherever a number is expected ("Input should be a finite number"). Each numeric field has an
  upper bound that says the largest value that still means something for one service (see the
  field's meaning below), so a typo such as `instances: 1000000000` is a located error, not a
  capacity analysis that runs for hours.
- **Size and shape.** A file (or a pipe, a FIFO, a device, or standard input given as `-`) is
  read up to 4 MiB + 1 byte and refused beyond that; a directory or an unreadable file is an
  error; alias expansion stops at 200,000 nodes and nesting at 64 levels; duplicate keys and
  several documents in one file are errors. A pipe that stalls is given up after 30 s.
"""


def _bounds(metadata: list[Any]) -> str:
    """The numeric bounds of a field as text, e.g. '1 to 128', '> 0, at most 86400'."""
    b = {k: getattr(m, k) for m in metadata for k in ("ge", "gt", "le", "lt") if hasattr(m, k)}
    if "ge" in b and "le" in b:
        return f"{b['ge']:,} to {b['le']:,}"
    parts = [f"{op} {b[k]:,}" for k, op in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")) if k in b]
    return ", ".join(parts)


def _type_name(tp: Any, metadata: list[Any] | None = None) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if metadata:
        name, bounds = _type_name(tp), _bounds(metadata)
        return f"{name} ({bounds})" if bounds else name
    if origin is typing.Annotated:
        inner = [m for a in args[1:] for m in getattr(a, "metadata", [a])]
        return _type_name(args[0], inner)
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


def _models(tp: Any, seen: list[Any]) -> None:
    origin = typing.get_origin(tp)
    if origin is not None:
        for a in typing.get_args(tp):
            _models(a, seen)
        return
    if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in seen:
        seen.append(tp)
        for f in tp.model_fields.values():
            _models(f.annotation, seen)


def _ref_role(cls: type[BaseModel], name: str) -> str:
    """'the id of a stage' for a reference field, 'unique among stages' for an id (archkit.spec.refs)."""
    info = class_refs(cls)
    for attr, _, marker, many in info.refs:
        if attr == name:
            return f"{'ids' if many else 'the id'} of {'' if many else 'a '}{marker.label} (AK103)"
    if name == "id" and info.id_of is not None:
        scope = f" of the same {info.id_of.scope}" if info.id_of.scope else ""
        return f"unique among the {info.id_of.namespace} ids{scope} (AK102)"
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown() -> str:
    seen: list[Any] = []
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
            role = _ref_role(cls, name)
            desc = f"{role}; {desc}" if role and desc else role or desc
            tname = _type_name(f.annotation, [m for m in f.metadata if not hasattr(m, "max_length")])
            out.append(f"| `{key}` | {_cell(tname)} | {default} | {_cell(desc)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
