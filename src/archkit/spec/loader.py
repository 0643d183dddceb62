"""A safe, bounded YAML loader that keeps the source location of every key and value.

Safety: only YAML's core tags are accepted (no object construction), alias expansion is
bounded (a billion-laughs document is refused after a fixed number of nodes), files over
a size cap are refused, and duplicate keys are errors. Every problem becomes a located
Diagnostic; nothing here raises to the caller.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from archkit.diagnostics import Diagnostic, Severity
from archkit.errors import ArchkitError, InputError
from archkit.spec.model import Spec, assign_paths
from archkit.spec.sourcemap import FieldPath, Loc, SourceMap, format_path
from archkit.spec.validation import clean_loc, validation_diagnostics

MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000  # total nodes after alias expansion
MAX_DEPTH = 64
# A number written with more characters than this is refused before any conversion: a double
# has 17 significant digits and the spec's largest bounds have 10, so 50 leaves room for
# signs, exponents and zeros while staying far below Python's int-to-str limit (4,300 digits).
MAX_NUMBER_CHARS = 50
# Pipes, FIFOs and devices have no size to check up front: they are read with a deadline.
READ_TIMEOUT_S = 30.0

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MAP, _SEQ, _MERGE = _TAG + "map", _TAG + "seq", _TAG + "merge"
_SCALAR_TAGS = {_STR, _INT, _FLOAT, _BOOL, _NULL}
_CORE_TAGS = _SCALAR_TAGS | {_MAP, _SEQ}

# YAML 1.2 core schema (yaml.org/spec/1.2.2 §10.3.2): the only plain scalars that are not text.
# YAML 1.1's extras (yes/no/on/off, 0777 octals, 1_000, 1:30 sexagesimals, timestamps, '=')
# stay text, so nothing reaches PyYAML's own constructors.
_NULL_RX = re.compile(r"(?:~|null|Null|NULL|)")
_BOOL_RX = re.compile(r"(?:true|True|TRUE|false|False|FALSE)")
_INT_RX = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT_RX = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)

_Base: type[yaml.SafeLoader]
try:  # the C composer is much faster on big specs; marks are the same
    _Base = yaml.CSafeLoader  # type: ignore[attr-defined,unused-ignore,assignment]
except AttributeError:  # pragma: no cover - libyaml missing
    _Base = yaml.SafeLoader


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """Resolves plain scalars by the YAML 1.2 core schema: `when: yes` stays the text 'yes'."""


_Loader.yaml_implicit_resolvers = {}
for _tag, _rx, _first in (
    (_NULL, _NULL_RX, ["~", "n", "N", ""]),
    (_BOOL, _BOOL_RX, list("tTfF")),
    (_INT, _INT_RX, list("-+0123456789")),
    (_FLOAT, _FLOAT_RX, list("-+0123456789.")),
    (_MERGE, re.compile(r"<<"), ["<"]),  # resolved only to refuse it with a clear message
):
    _Loader.add_implicit_resolver(_tag, re.compile(rf"^(?:{_rx.pattern})$"), _first)


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag


class _LoadError(ArchkitError):
    def __init__(self, message: str, line: int = 1, col: int = 1, code: str = "AK100", path: FieldPath = ()):
        super().__init__(message)
        self.message, self.line, self.col, self.code, self.path = message, line, col, code, path


class _Converter:
    """Turns a composed node graph into plain Python, counting expanded nodes."""

    def __init__(self, smap: SourceMap):
        self.smap = smap
        self.count = 0

    def convert(self, node: yaml.Node, path: FieldPath, depth: int = 0) -> Any:
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
        _check_tag(node, path)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
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
                _check_tag(knode, path)
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
        assert isinstance(node, yaml.ScalarNode)
        return _scalar(node, path)


def _check_tag(node: yaml.Node, path: FieldPath) -> None:
    """Only core-schema tags, each on its own node kind: !!map on a mapping, and so on."""
    tag = node.tag
    if tag == _MERGE and isinstance(node, yaml.ScalarNode):
        return  # the mapping refuses merge keys with its own message
    if tag not in _CORE_TAGS:
        reason = (
            "the spec has no date fields; write dates as quoted text"
            if tag == _TAG + "timestamp"
            else "only plain data is accepted"
        )
        raise _LoadError(
            f"YAML tag {_short_tag(tag)!r} is not allowed ({reason})", *_mark(node), "AK100", path
        )
    kind = (
        "mapping"
        if isinstance(node, yaml.MappingNode)
        else "sequence"
        if isinstance(node, yaml.SequenceNode)
        else "scalar"
    )
    fits = {_MAP: "mapping", _SEQ: "sequence"}.get(tag, "scalar")
    if kind != fits:
        raise _LoadError(
            f"YAML tag {_short_tag(tag)!r} cannot be put on a {kind}", *_mark(node), "AK100", path
        )


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _scalar(node: yaml.ScalarNode, path: FieldPath = ()) -> Any:
    """A scalar by the YAML 1.2 core schema, resolved here (never by PyYAML's constructors), so
    an explicit `!!int abc` is a located error and not a ValueError from deep inside PyYAML."""
    text, tag = node.value, node.tag
    if tag in (_STR, _MERGE):  # '<<' is a merge only as a key (refused there); as a value it is text
        return text
    if tag in (_INT, _FLOAT) and len(text) > MAX_NUMBER_CHARS:
        raise _LoadError(
            f"a number of {len(text)} characters is over the {MAX_NUMBER_CHARS}-character limit"
            " (quote it if it is text)",
            *_mark(node),
            "AK100",
            path,
        )
    rx = {_NULL: _NULL_RX, _BOOL: _BOOL_RX, _INT: _INT_RX, _FLOAT: _FLOAT_RX}[tag]
    if not rx.fullmatch(text):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise _LoadError(
            f"{shown!r} is not a valid {_short_tag(tag)} (YAML 1.2 core schema)", *_mark(node), "AK100", path
        )
    if tag == _NULL:
        return None
    if tag == _BOOL:
        return text.lower() == "true"
    if tag == _INT:
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text, 10)
    low = text.lower()
    if low.endswith(".nan"):
        return math.nan
    if low.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    return float(text)


def _plain_copy(value: Any) -> Any:
    """A copy of loaded plain data (dicts, lists, scalars); depth is bounded by MAX_DEPTH."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
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
    smap.read_ignores(text)
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


def _salvage(
    data: dict[str, Any], exc: ValidationError, smap: SourceMap, file: str, rounds: int = 4
) -> Spec | None:
    """Drop every invalid value and validate again, so that reference and structure checks can
    still report their findings in the same run as the schema errors (several errors at once).
    Gives up (None) when a required field is missing or nothing more can be dropped."""
    work = _plain_copy(data)
    for _ in range(rounds):
        dropped = False
        for err in exc.errors(include_url=False):
            path = clean_loc(tuple(err["loc"]), work)
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


class ReadError(InputError):
    """A file that cannot be read as a spec: its message is one line, without the file name."""


def read_capped(
    path: str | os.PathLike[str], cap: int, timeout_s: float | None = None, what: str = "a spec"
) -> bytes:
    """At most `cap` bytes of a file, pipe, FIFO, device or of standard input (`-`).

    Reads cap + 1 bytes at most, so /dev/zero or an endless pipe is refused as soon as it passes
    the cap (`st_size` is 0 for those and cannot be trusted). Pipes and devices are read without
    blocking, within `timeout_s` in all. Raises ReadError with a one-line reason."""
    import select
    import stat
    import time

    timeout = READ_TIMEOUT_S if timeout_s is None else timeout_s
    if str(path) == "-":
        fd, own = 0, False
        if os.isatty(0):
            raise ReadError("standard input is a terminal; pipe a file in (archkit check - < spec.yaml)")
    else:
        try:
            # O_NONBLOCK: opening a FIFO without a writer must not hang; cleared for plain files
            fd, own = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)), True
        except FileNotFoundError:
            raise ReadError("file not found") from None
        except OSError as exc:
            raise ReadError(f"cannot read file: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ReadError("is a directory, not a file")
        regular, fifo = stat.S_ISREG(mode), stat.S_ISFIFO(mode) and own
        if regular and own:
            os.set_blocking(fd, True)
        elif not own:
            os.set_blocking(fd, False)
        chunks: list[bytes] = []
        got = 0
        deadline = time.monotonic() + timeout
        while got <= cap:
            try:
                chunk = os.read(fd, min(cap + 1 - got, 1 << 20))
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ReadError(
                        f"no complete input within {timeout:g} s (a pipe or device that stalls?)"
                    ) from None
                select.select([fd], [], [], min(left, 1.0))
                continue
            except OSError as exc:
                raise ReadError(f"cannot read file: {exc.strerror or exc}") from None
            if not chunk:
                if got == 0 and fifo and time.monotonic() < deadline:
                    time.sleep(0.05)  # a named FIFO whose writer has not opened it yet reads as EOF
                    continue
                break
            chunks.append(chunk)
            got += len(chunk)
            if not regular and time.monotonic() > deadline:
                raise ReadError(f"no complete input within {timeout:g} s (a pipe or device that stalls?)")
        if got > cap:
            raise ReadError(f"file is over the {cap}-byte limit for {what}")
        return b"".join(chunks)
    finally:
        if own:
            os.close(fd)


def load_file(path: str | os.PathLike[str]) -> LoadResult:
    """Load a spec file (or `-`, standard input), refusing huge, binary or unreadable input
    with a located error in bounded time."""
    file = "<stdin>" if str(path) == "-" else str(path)
    try:
        raw = read_capped(path, MAX_FILE_BYTES)
    except ReadError as exc:
        return LoadResult(file, None, None, [Diagnostic("AK100", Severity.ERROR, str(exc), file)])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return LoadResult(
            file, None, None, [Diagnostic("AK100", Severity.ERROR, "file is not UTF-8 text", file, line, col)]
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return load_text(text, file)


def source_of(spec: Spec) -> SourceMap:
    """The source map a loaded spec came with (an empty one for specs built in code)."""
    return spec.__dict__.get("_archkit_source") or SourceMap(spec.__dict__.get("_archkit_file", "<spec>"))


def file_of(spec: Spec) -> str:
    return str(spec.__dict__.get("_archkit_file", "<spec>"))
