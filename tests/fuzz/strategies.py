"""Hypothesis strategies that mutate real specs: lines, tokens, values, tags and structure.

The seeds are the examples and the reference spec, so most mutants are one edit away from a
valid spec and reach the schema and every check rule, not only the YAML parser.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import yaml
from hypothesis import strategies as st

from archkit.spec.loader import _plain_copy as _copy  # faster than copy.deepcopy on plain data
from tests.conftest import EXAMPLES, ROOT

SEEDS = [*EXAMPLES, ROOT / "specs" / "ocr-reference.yaml"]

# Values that have broken loaders and analyses before: huge counts (linear loops), digit strings
# past Python's int-to-str limit, non-finite floats, YAML 1.1 dates and times that do not exist,
# tags on the wrong node kind, object-building tags.
NUMBER_EXTREMES = [
    "0",
    "-1",
    "-0.0",
    "1",
    "2",
    "1000000000",
    "999999999999",
    str(2**63),
    str(2**64 + 1),
    "1e308",
    "1e999",
    "-1e999",
    "5e-324",
    "1e-320",
    ".inf",
    "-.inf",
    ".nan",
    ".NaN",
    "0x7FFFFFFF",
    "0o777",
    "0777",
    "1_000",
    "1:30",
    "9" * 60,
    "9" * 4301,
    "1." + "0" * 80,
]
TAGS = [
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!str",
    "!!map",
    "!!seq",
    "!!timestamp",
    "!!binary",
    "!!set",
    "!!omap",
    "!!pairs",
    "!custom",
    "!",
    "!!python/object/apply:os.system",
    "!!python/name:os.system",
    "!<tag:yaml.org,2002:int>",
]
SCALAR_EXTREMES = [
    "",
    "''",
    '""',
    "~",
    "null",
    "true",
    "yes",
    "maybe",
    "abc",
    "2024-13-01",
    "2024-01-01 25:00:00",
    "2024-02-30T10:00:00Z",
    "12:99:99",
    "'\\u202e'",
    '"\\x1b[2J"',
    "x" * 5000,
    "[]",
    "{}",
    "[[[[[[[[]]]]]]]]",
    "&a x",
    "*a",
    "*undefined",
    "<<",
    "=",
    "- a",
    "? x",
    "|",
    ">-",
    "%TAG ! tag:x,2000:",
]
TOKENS = [":", ": ", "- ", "{", "}", "[", "]", ",", "#", "'", '"', "&a", "*a", "? ", "|", ">", "\t", "  "]

_VALUE = re.compile(r"(?<=: )[^\s{}\[\],#][^,}\]#]*|(?<=- )[^\s{}\[\],#:][^,}\]#:]*")
_WORD = re.compile(r"[A-Za-z0-9_.\-]+|[^A-Za-z0-9_.\-\s]")


@cache
def seed_texts() -> tuple[str, ...]:
    return tuple(p.read_text(encoding="utf-8") for p in SEEDS)


@cache
def seed_data() -> tuple[Any, ...]:
    return tuple(yaml.safe_load(t) for t in seed_texts())


@cache
def corpus_words() -> tuple[str, ...]:
    words = sorted({w for t in seed_texts() for w in _WORD.findall(t) if len(w) < 40})
    return tuple(words)


@cache
def _value_spots(k: int) -> list[tuple[int, int]]:
    return [m.span() for m in _VALUE.finditer(seed_texts()[k])]


@cache
def _tag_spots(k: int) -> list[int]:
    return [m.start() for m in re.finditer(r"(?<=: )|(?<=- )|(?<=\n)(?=\s*[a-z_]+:)", seed_texts()[k])]


def any_value() -> st.SearchStrategy[str]:
    """A replacement scalar: an extreme number, a hostile scalar, a tagged one, or a corpus word."""
    plain = st.sampled_from(NUMBER_EXTREMES + SCALAR_EXTREMES) | st.sampled_from(corpus_words())
    tagged = st.builds(lambda t, v: f"{t} {v}", st.sampled_from(TAGS), plain)
    return st.one_of(plain, plain, tagged, st.integers(-(2**70), 2**70).map(str))


@st.composite
def line_mutation(draw: st.DrawFn) -> str:
    """Delete, duplicate, move, re-indent or truncate lines of a seed spec."""
    lines = draw(st.sampled_from(seed_texts())).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "move", "indent", "dedent", "truncate"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "move":
            lines.insert(draw(st.integers(0, len(lines) - 1)), lines.pop(i))
        elif op == "indent":
            lines[i] = "  " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i][2:] if lines[i].startswith("  ") else lines[i]
        else:
            lines = lines[:i]
    return "\n".join(lines) + "\n"


@st.composite
def token_mutation(draw: st.DrawFn) -> str:
    """Replace, insert or delete one token on a few lines (YAML punctuation, corpus words)."""
    lines = draw(st.sampled_from(seed_texts())).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        toks = _WORD.findall(lines[i]) or [""]
        j = draw(st.integers(0, len(toks) - 1))
        op = draw(st.sampled_from(["replace", "insert", "delete"]))
        new = draw(st.sampled_from(TOKENS) | st.sampled_from(corpus_words()))
        start = lines[i].find(toks[j]) if toks[j] else 0
        end = start + len(toks[j])
        if op == "replace":
            lines[i] = lines[i][:start] + new + lines[i][end:]
        elif op == "insert":
            lines[i] = lines[i][:start] + new + lines[i][start:]
        else:
            lines[i] = lines[i][:start] + lines[i][end:]
    return "\n".join(lines) + "\n"


@st.composite
def value_mutation(draw: st.DrawFn) -> str:
    """Replace the values of a few `key: value` or `- value` spots with extremes or tagged scalars."""
    k = draw(st.integers(0, len(SEEDS) - 1))
    text, spots = seed_texts()[k], _value_spots(k)
    chosen = sorted(set(draw(st.lists(st.integers(0, len(spots) - 1), min_size=1, max_size=4))), reverse=True)
    for k in chosen:
        a, b = spots[k]
        text = text[:a] + draw(any_value()) + text[b:]
    return text


@st.composite
def tag_injection(draw: st.DrawFn) -> str:
    """Put a tag in front of a few values, keys or collections."""
    k = draw(st.integers(0, len(SEEDS) - 1))
    text, spots = seed_texts()[k], _tag_spots(k)
    for pos in sorted(set(draw(st.lists(st.sampled_from(spots), min_size=1, max_size=3))), reverse=True):
        text = text[:pos] + draw(st.sampled_from(TAGS)) + " " + text[pos:]
    return text


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, path + (i,))
    return out


def _get(node: Any, path: tuple) -> Any:
    for part in path:
        node = node[part]
    return node


@st.composite
def structural_mutation(draw: st.DrawFn) -> str:
    """Edit the parsed tree of a seed: drop keys, graft subtrees elsewhere (type confusion),
    duplicate list items (duplicate ids), wrap values in lists, set numbers to extremes."""
    data = _copy(draw(st.sampled_from(seed_data())))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(data)[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _get(data, path[:-1]), path[-1]
        op = draw(st.sampled_from(["drop", "graft", "dup", "wrap", "none", "number", "huge-list"]))
        if op == "drop":
            del parent[key]
        elif op == "graft":
            parent[key] = _copy(_get(data, draw(st.sampled_from(paths))))
        elif op == "dup" and isinstance(parent, list):
            parent.insert(key, _copy(parent[key]))
        elif op == "wrap":
            parent[key] = [parent[key]]
        elif op == "none":
            parent[key] = None
        elif op == "number":
            parent[key] = yaml.safe_load(draw(st.sampled_from(NUMBER_EXTREMES[:14])))
        elif op == "huge-list" and isinstance(parent, list):
            parent.extend(_copy(parent[key]) for _ in range(draw(st.integers(10, 300))))
    try:
        return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 20)
    except (yaml.YAMLError, RecursionError, ValueError):
        return "apiVersion: archkit/v1\n"


def mutated_spec() -> st.SearchStrategy[str]:
    """Any of the mutation families, in about the proportions of the independent fuzzing run."""
    return st.one_of(
        line_mutation(), token_mutation(), value_mutation(), tag_injection(), structural_mutation()
    )
