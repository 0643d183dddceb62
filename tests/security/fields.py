"""The free-text string fields of a spec, found by walking the model (not a hand-made list).

A field qualifies when the model holds a string there (or an optional string field is unset on
an object the spec has) and a hostile probe in it still loads: ids, enums, literals and
patterned fields refuse the probe and drop out. Dict values and list items of strings count.
"""

from __future__ import annotations

import copy
import re
import tempfile
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from archkit import api

Path_ = tuple[str | int, ...]
PROBE = 'p{{ x }}$(y)`z`;\'"<s>\\\n!include %getenv("HOME") \u202e\x1b[31m'


def path_text(path: Path_) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _field_name(model: BaseModel, key: str) -> str | None:
    for name, info in type(model).model_fields.items():
        if key in (name, info.alias):
            return name
    return None


def _walk(doc: Any, model: Any, path: Path_, out: list[Path_]) -> None:
    if isinstance(model, BaseModel) and isinstance(doc, dict):
        for key, value in doc.items():
            name = _field_name(model, str(key))
            if name is not None:
                _walk(value, getattr(model, name), (*path, key), out)
        for name, info in type(model).model_fields.items():
            key = info.alias or name
            if key not in doc and getattr(model, name) is None and "str" in repr(info.annotation):
                out.append((*path, key))  # an unset optional text field: set it
    elif isinstance(model, list) and isinstance(doc, list):
        for i, (d, m) in enumerate(zip(doc, model, strict=False)):
            _walk(d, m, (*path, i), out)
    elif isinstance(model, dict) and isinstance(doc, dict):
        for key, value in doc.items():
            if isinstance(value, str) and key in model and not isinstance(model[key], Enum):
                out.append((*path, key))
            else:
                _walk(value, model.get(key), (*path, key), out)
    elif isinstance(doc, str) and isinstance(model, str) and not isinstance(model, Enum):
        out.append(path)


def put(doc: Any, path: Path_, value: str) -> None:
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def _load(doc: dict[str, Any], folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "probe.yaml"
    f.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return api.load(f)


@lru_cache(maxsize=16)
def text_fields(spec_file: str) -> tuple[dict[str, Any], tuple[Path_, ...]]:
    """(the spec's YAML document, the paths of its free-text fields)."""
    with tempfile.TemporaryDirectory(prefix="archkit-fields-") as work:
        return _text_fields(spec_file, Path(work))


def _text_fields(spec_file: str, work: Path) -> tuple[dict[str, Any], tuple[Path_, ...]]:
    doc = yaml.safe_load(Path(spec_file).read_text(encoding="utf-8"))
    res = api.load(Path(spec_file))
    assert res.spec is not None
    paths: list[Path_] = []
    _walk(doc, res.spec, (), paths)
    for _ in range(40):  # drop what refuses the probe, a few located errors at a time
        trial = copy.deepcopy(doc)
        for p in paths:
            put(trial, p, PROBE)
        res = _load(trial, work)
        if res.spec is not None:
            return doc, tuple(paths)
        bad = [
            re.sub(r"\[\d+\]$", "", d.path) if d.path not in map(path_text, paths) else d.path
            for d in res.diagnostics
        ]
        keep = [
            p
            for p in paths
            if not any(
                path_text(p) == b or path_text(p).startswith(b + ".") or path_text(p).startswith(b + "[")
                for b in bad
                if b
            )
        ]
        if len(keep) == len(paths):  # nothing located: leave out the added fields
            keep = [p for p in paths if _present(doc, p)]
            if len(keep) == len(paths):
                raise AssertionError([d.text() for d in res.diagnostics][:5])
        paths = keep
    raise AssertionError("the text fields did not settle")


def _present(doc: Any, path: Path_) -> bool:
    node = doc
    for p in path:
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return False
    return True
