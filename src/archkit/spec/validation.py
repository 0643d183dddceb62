"""Schema errors as located diagnostics: pydantic's errors mapped back to the document's lines,
with a did-you-mean for keys and enum values and the reason for a field's bound."""

from __future__ import annotations

import difflib
import re
import types
from typing import Any

from pydantic import BaseModel, ValidationError

from archkit.diagnostics import Diagnostic, Severity, sort_diagnostics
from archkit.spec.model import Spec
from archkit.spec.sourcemap import FieldPath, SourceMap, format_path


def _model_at(path: FieldPath) -> type[BaseModel] | None:
    """The pydantic model class that describes the object at `path` in the document."""
    import typing

    cls: Any = Spec
    for part in path:
        if isinstance(part, int):
            continue
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
            return None
        fields = {(f.alias or n): f for n, f in cls.model_fields.items()}
        if part not in fields:
            return None
        cls = _unwrap(fields[part].annotation, typing)
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


def _unwrap(tp: Any, typing: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin is None:
            return tp
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if origin is typing.Annotated:
            tp = args[0]
        elif origin in (list, typing.Union, types.UnionType):
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            tp = models[0] if models else (args[0] if args else None)
        elif origin is dict:
            tp = args[-1] if args else None
        else:
            return tp


def _suggest(key: str, path: FieldPath) -> str:
    cls = _model_at(path)
    if cls is None:
        return ""
    names = [f.alias or n for n, f in cls.model_fields.items()]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return "allowed: " + ", ".join(sorted(names))


def _bound_reason(path: FieldPath) -> str:
    """Why a field has its upper bound: the field's description (see MAX_* in the model)."""
    keys = [p for p in path if isinstance(p, str)]
    cls = _model_at(path[: max(i for i, p in enumerate(path) if isinstance(p, str))]) if keys else None
    if cls is None:
        return ""
    fields = {(f.alias or n): f for n, f in cls.model_fields.items()}
    f = fields.get(keys[-1])
    if f is None:
        return ""
    import typing

    texts = [f.description] + [getattr(m, "description", None) for m in f.metadata]
    tp = f.annotation
    for arg in (tp, *typing.get_args(tp)):  # Annotated[int, Field(description=...)] | None
        texts += [getattr(m, "description", None) for m in getattr(arg, "__metadata__", ())]
    return next((t for t in texts if t), "")


def _suggest_value(got: str, expected: str) -> str:
    """`did you mean 'postprocess'?` for an enum value close to one of the `expected` ones."""
    choices = re.findall(r"'([^']*)'", expected)
    if len(choices) < 2:  # one allowed value (apiVersion): the message already names it
        return ""
    folded = {c.lower().replace("-", "").replace("_", ""): c for c in choices}
    key = got.lower().replace("-", "").replace("_", "")
    close = [folded[key]] if key in folded else difflib.get_close_matches(got, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else ""


def clean_loc(loc: FieldPath, data: Any) -> FieldPath:
    """Drop pydantic's union/validator tags from a location, keeping document keys."""
    out: list[Any] = []
    cur = data
    for part in loc:
        if (
            isinstance(cur, dict)
            and part in cur
            or isinstance(cur, list)
            and isinstance(part, int)
            and 0 <= part < len(cur)
        ):
            out.append(part)
            cur = cur[part]
        elif isinstance(part, str) and (
            part.startswith("function-")
            or "[" in part
            or part in {"str", "int", "float", "bool", "list", "dict"}
        ):
            continue
        else:
            out.append(part)
            cur = None
    return tuple(out)


def validation_diagnostics(exc: ValidationError, smap: SourceMap, data: Any) -> list[Diagnostic]:
    diags = []
    for err in exc.errors(include_url=False):
        path = clean_loc(tuple(err["loc"]), data)
        etype = err["type"]
        hint = ""
        if etype == "extra_forbidden":
            key = str(path[-1]) if path else ""
            msg = f"unknown key '{key}'"
            hint = _suggest(key, path[:-1])
            loc = smap.at(path, key=True)
            code = "AK101"
        elif etype == "missing":
            msg = f"missing required field '{path[-1]}'" if path else "missing required field"
            loc = smap.at(path[:-1])
            code = "AK101"
        else:
            got = err.get("input")
            shown = (
                repr(got) if isinstance(got, (str, int, float, bool)) or got is None else type(got).__name__
            )
            if len(shown) > 60:
                shown = shown[:57] + "..."
            msg = f"{err['msg'].rstrip('.')}; got {shown}"
            loc = smap.at(path)
            code = "AK101"
            if (
                etype in ("float_parsing", "int_parsing")
                and isinstance(got, str)
                and re.fullmatch(r"\s*-?[0-9.]+\s*[A-Za-z%/]+\s*", got)
            ):
                hint = "units belong in the key name (e.g. p99_ms: 50), values are plain numbers"
            elif etype in ("less_than_equal", "less_than"):
                hint = _bound_reason(path)
            elif etype in ("enum", "literal_error") and isinstance(got, str):
                hint = _suggest_value(got, str((err.get("ctx") or {}).get("expected", "")))
        diags.append(
            Diagnostic(code, Severity.ERROR, msg, smap.file, loc.line, loc.col, format_path(path), hint)
        )
    return sort_diagnostics(diags)
