"""A safe, bounded YAML loader that keeps the source location of every key and value.

Safety: only YAML's core tags are accepted (no object construction), alias expansion is
bounded (a billion-laughs document is refused after a fixed number of nodes), files over
a size cap are refused, and duplicate keys are errors. Every problem becomes a located
Diagnostic; nothing here raises to the caller.
"""

from __future__ import annotations

import difflib
import os
import re
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, ValidationError

from archkit.diagnostics import Diagnostic, Severity, sort_diagnostics
from archkit.spec.model import Spec, assign_paths

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000  # total nodes after alias expansion
MAX_DEPTH = 64

_CORE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:timestamp",
}

try:  # the C composer is much faster on big specs; marks are the same
    _Base = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """YAML 1.2 booleans: only true/false are booleans, so `when: yes` stays the text 'yes'."""


_BOOL = "tag:yaml.org,2002:bool"
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL]
    for first, resolvers in _Base.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


class Loc(NamedTuple):
    """A 1-based line and column (a tuple: the loader makes one per key and value)."""

    line: int
    col: int


@dataclass
class SourceMap:
    """Where each value (and each mapping key) of the document starts, by field path."""

    file: str
    values: dict[tuple, Loc] = field(default_factory=dict)
    keys: dict[tuple, Loc] = field(default_factory=dict)

    def at(self, path: tuple, key: bool = False) -> Loc:
        """The location of `path`, or of its nearest located ancestor."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if not key and p in self.keys:
                return self.keys[p]
            p = p[:-1]
        return self.values.get((), Loc(1, 1))


def format_path(path: tuple) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class _LoadError(Exception):
    def __init__(self, message: str, line: int = 1, col: int = 1, code: str = "AK100", path: tuple = ()):
        super().__init__(message)
        self.message, self.line, self.col, self.code, self.path = message, line, col, code, path


class _Converter:
    """Turns a composed node graph into plain Python, counting expanded nodes."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.count = 0

    def convert(self, node: yaml.Node, path: tuple, depth: int = 0) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            top = path[:1]
            where = self.smap.keys.get(top) or Loc(node.start_mark.line + 1, node.start_mark.column + 1)
            raise _LoadError(
                f"document expands to more than {MAX_NODES} nodes through aliases "
                "(an alias expansion bomb?); refusing to load it",
                where.line,
                where.col,
                "AK100",
                top,
            )
        if depth > MAX_DEPTH:
            raise _LoadError(
                f"document nests deeper than {MAX_DEPTH} levels",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                "AK100",
                path,
            )
        self.smap.values.setdefault(path, Loc(node.start_mark.line + 1, node.start_mark.column + 1))
        if node.tag not in _CORE_TAGS:
            raise _LoadError(
                f"YAML tag {node.tag!r} is not allowed (only plain data is accepted)",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                "AK100",
                path,
            )
        if isinstance(node, yaml.MappingNode):
            out: dict = {}
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    raise _LoadError(
                        "YAML merge keys ('<<') are not supported; repeat the fields",
                        knode.start_mark.line + 1,
                        knode.start_mark.column + 1,
                        "AK100",
                        path,
                    )
                if not isinstance(knode, yaml.ScalarNode):
                    raise _LoadError(
                        "mapping keys must be plain scalars",
                        knode.start_mark.line + 1,
                        knode.start_mark.column + 1,
                        "AK100",
                        path,
                    )
                key = knode.value
                if key in out:
                    raise _LoadError(
                        f"duplicate key {key!r}",
                        knode.start_mark.line + 1,
                        knode.start_mark.column + 1,
                        "AK100",
                        path + (key,),
                    )
                kpath = path + (key,)
                self.smap.keys.setdefault(kpath, Loc(knode.start_mark.line + 1, knode.start_mark.column + 1))
                out[key] = self.convert(vnode, kpath, depth + 1)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(v, path + (i,), depth + 1) for i, v in enumerate(node.value)]
        return _scalar(node)


_CONSTRUCTOR = yaml.SafeLoader("")  # only used for its scalar constructors (no caching)


def _scalar(node: yaml.ScalarNode) -> Any:
    try:
        value = _CONSTRUCTOR.yaml_constructors[node.tag](_CONSTRUCTOR, node)
    except yaml.YAMLError as exc:
        raise _LoadError(
            f"bad scalar value: {exc}", node.start_mark.line + 1, node.start_mark.column + 1
        ) from None
    if hasattr(value, "isoformat"):  # timestamps: keep the text the user wrote
        return node.value
    return value


@dataclass
class LoadResult:
    """A loaded spec (or None) with every diagnostic found on the way."""

    file: str
    spec: Spec | None
    source: SourceMap | None
    diagnostics: list[Diagnostic]
    data: Any = None
    partial: Spec | None = None  # the spec with its invalid values dropped, when that validates

    @property
    def ok(self) -> bool:
        return self.spec is not None


def parse_yaml(text: str, file: str = "<spec>") -> tuple[Any, SourceMap]:
    """Parse YAML text into plain data and its source map; raises _LoadError."""
    smap = SourceMap(file)
    try:
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or str(exc)
        ctx = f" ({exc.context})" if exc.context else ""
        raise _LoadError(f"YAML syntax error: {problem}{ctx}", line, col) from None
    except yaml.YAMLError as exc:
        raise _LoadError(f"YAML error: {exc}") from None
    except RecursionError:
        raise _LoadError(f"document nests deeper than {MAX_DEPTH} levels") from None
    if not nodes or nodes[0] is None:
        raise _LoadError("the file is empty; a spec starts with 'apiVersion: archkit/v1'")
    if len(nodes) > 1:
        n = nodes[1]
        raise _LoadError(
            "the file holds several YAML documents; a spec is one document",
            n.start_mark.line + 1,
            n.start_mark.column + 1,
        )
    data = _Converter(smap).convert(nodes[0], ())
    return data, smap


def load_text(text: str, file: str = "<spec>") -> LoadResult:
    """Load a spec from text: YAML, then the schema. Never raises."""
    try:
        data, smap = parse_yaml(text, file)
    except _LoadError as err:
        diag = Diagnostic(
            err.code, Severity.ERROR, err.message, file, err.line, err.col, format_path(err.path)
        )
        return LoadResult(file, None, None, [diag])
    if not isinstance(data, dict):
        loc = smap.at(())
        return LoadResult(
            file,
            None,
            smap,
            [
                Diagnostic(
                    "AK101",
                    Severity.ERROR,
                    "a spec is a mapping that starts with 'apiVersion: archkit/v1'",
                    file,
                    loc.line,
                    loc.col,
                )
            ],
            data,
        )
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        result = LoadResult(file, None, smap, validation_diagnostics(exc, smap, data), data)
        result.partial = _salvage(data, exc, smap, file)
        return result
    except (RecursionError, ValueError, TypeError) as exc:  # defensive: never a traceback
        return LoadResult(
            file, None, smap, [Diagnostic("AK101", Severity.ERROR, f"invalid spec: {exc}", file)], data
        )
    assign_paths(spec)
    spec.__dict__["_archkit_source"] = smap
    spec.__dict__["_archkit_file"] = file
    return LoadResult(file, spec, smap, [], data)


def _salvage(data: dict, exc: ValidationError, smap: SourceMap, file: str, rounds: int = 4) -> Spec | None:
    """Drop every invalid value and validate again, so that reference and structure checks can
    still report their findings in the same run as the schema errors (several errors at once).
    Gives up (None) when a required field is missing or nothing more can be dropped."""
    import copy

    work = copy.deepcopy(data)
    for _ in range(rounds):
        dropped = False
        for err in exc.errors(include_url=False):
            path = _clean_loc(tuple(err["loc"]), work)
            if err["type"] == "missing" or not path:
                return None
            parent = work
            for part in path[:-1]:
                try:
                    parent = parent[part]
                except (KeyError, IndexError, TypeError):
                    parent = None
                    break
            if isinstance(parent, dict) and path[-1] in parent:
                del parent[path[-1]]
                dropped = True
        if not dropped:
            return None
        try:
            spec = Spec.model_validate(work)
        except ValidationError as again:
            exc = again
            continue
        except (RecursionError, ValueError, TypeError):
            return None
        assign_paths(spec)
        spec.__dict__["_archkit_source"] = smap
        spec.__dict__["_archkit_file"] = file
        return spec
    return None


def load_file(path: str | os.PathLike) -> LoadResult:
    """Load a spec file, refusing huge, binary or unreadable files with a located error."""
    file = str(path)
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise IsADirectoryError(file)
    except FileNotFoundError:
        return LoadResult(file, None, None, [Diagnostic("AK100", Severity.ERROR, "file not found", file)])
    except OSError as exc:
        return LoadResult(
            file,
            None,
            None,
            [Diagnostic("AK100", Severity.ERROR, f"cannot read file: {exc.strerror or exc}", file)],
        )
    if size > MAX_FILE_BYTES:
        return LoadResult(
            file,
            None,
            None,
            [
                Diagnostic(
                    "AK100",
                    Severity.ERROR,
                    f"file is {size} bytes, over the {MAX_FILE_BYTES}-byte limit for a spec",
                    file,
                )
            ],
        )
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return LoadResult(
            file, None, None, [Diagnostic("AK100", Severity.ERROR, "file is not UTF-8 text", file, line, col)]
        )
    except OSError as exc:
        return LoadResult(
            file,
            None,
            None,
            [Diagnostic("AK100", Severity.ERROR, f"cannot read file: {exc.strerror or exc}", file)],
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return load_text(text, file)


# --------------------------------------------------------------------------- schema errors


def _model_at(path: tuple) -> type[BaseModel] | None:
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


def _unwrap(tp: Any, typing) -> Any:
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


def _suggest(key: str, path: tuple) -> str:
    cls = _model_at(path)
    if cls is None:
        return ""
    names = [f.alias or n for n, f in cls.model_fields.items()]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return "allowed: " + ", ".join(sorted(names))


def _clean_loc(loc: tuple, data: Any) -> tuple:
    """Drop pydantic's union/validator tags from a location, keeping document keys."""
    out: list = []
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
        path = _clean_loc(tuple(err["loc"]), data)
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
        diags.append(
            Diagnostic(code, Severity.ERROR, msg, smap.file, loc.line, loc.col, format_path(path), hint)
        )
    return sort_diagnostics(diags)


def source_of(spec: Spec) -> SourceMap:
    """The source map a loaded spec came with (an empty one for specs built in code)."""
    return spec.__dict__.get("_archkit_source") or SourceMap(spec.__dict__.get("_archkit_file", "<spec>"))


def file_of(spec: Spec) -> str:
    return spec.__dict__.get("_archkit_file", "<spec>")
