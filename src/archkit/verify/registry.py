"""The verify source registry: each source declares its options, its codes next to its checks, its docs.

A source (`kube`, `triton`, `prometheus`, ...) is one module with a `Source` subclass decorated
with `@register_source`. Its checks are small classes on `Check`, each carrying the code it
reports (id, title, rationale, where the rule comes from). `archkit verify`, `api.verify`,
`archkit explain` and docs/verify.md all iterate this registry; nothing else lists sources.
Third-party sources register through the `archkit.verify_sources` entry point group.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from archkit.errors import ArchkitError
from archkit.verify.findings import Code, Finding  # a check's Code is declared with the findings it reports

if TYPE_CHECKING:
    from archkit.spec.model import Spec

CODE_RE = re.compile(r"^V[A-Z][1-9][0-9]{2}$")
# The sources shipped with archkit, in report order; entry-point sources follow them.
BUILTIN = (
    "archkit.verify.kube",
    "archkit.verify.triton",
    "archkit.verify.prometheus",
    "archkit.verify.triton_repo",
    "archkit.verify.code",
    "archkit.verify.config_store",
    "archkit.verify.llamacpp",
    "archkit.verify.served_models",
)
ENTRY_POINTS = "archkit.verify_sources"


class DuplicateCodeError(ArchkitError, RuntimeError):
    """Two verify checks (or sources) claim the same code or name."""


class Check:
    """Base of a verify check: a small class carrying the code it reports.

    `also` lists further codes the same check reports where their findings interleave with its
    own (e.g. a mount and its mount options, one mount after another).
    """

    code: ClassVar[Code]
    also: ClassVar[tuple[Code, ...]] = ()

    @classmethod
    def codes(cls) -> tuple[Code, ...]:
        return (cls.code, *cls.also)


@dataclass(frozen=True)
class Option:
    """A command-line option a source needs (`name` is the keyword of `api.verify`)."""

    name: str
    help: str
    type: type = str
    flag: bool = False  # a boolean switch (`--live`) rather than an option with a value
    metavar: str | None = None

    @property
    def cli(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class DocRow:
    """One row of docs/verify.md's sources table."""

    option: str
    reads: str
    notes: str


Providers = Mapping[str, Callable[[], Any]]


@dataclass
class Reading:
    """What one source read: its entry in the report's `sources` and the findings of its checks."""

    entry: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    api_calls: int = 0


class Source:
    """Base of a verify source: set `name`, `prefix`, `options`, `docs`, `checks`; write `read` and `check`.

    `read` turns the options into the source's input (a cluster state, a URL, ...), raising
    `archkit.verify.state.StateError` when the source cannot be used at all; `check` runs the
    checks against that input. `default` marks the source used when no source option is given.
    `needs` names knowledge from outside verify (e.g. the rule groups the generators make) that
    the caller provides as callables.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    prefix: ClassVar[str]
    options: ClassVar[tuple[Option, ...]] = ()
    docs: ClassVar[tuple[DocRow, ...]] = ()
    checks: ClassVar[tuple[type[Check], ...]] = ()
    needs: ClassVar[tuple[str, ...]] = ()
    default: ClassVar[bool] = False
    default_options: ClassVar[dict[str, Any]] = {}  # what `default` means, e.g. {"live": True}

    def given(self, options: Mapping[str, Any]) -> bool:
        """Whether the options ask for this source."""
        return any(options.get(o.name) not in (None, False) for o in self.options)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        raise NotImplementedError  # pragma: no cover - abstract

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        raise NotImplementedError  # pragma: no cover - abstract

    @classmethod
    def codes(cls) -> list[Code]:
        return [c for chk in cls.checks for c in chk.codes()]


_SOURCES: dict[str, type[Source]] = {}
_CODES: dict[str, tuple[Code, str]] = {}
_LOADED = False


def register_source(cls: type[Source]) -> type[Source]:
    """Class decorator: add a source and its checks' codes; refuses malformed or duplicate codes."""
    name = getattr(cls, "name", "")
    if not name or (name in _SOURCES and _SOURCES[name] is not cls):
        raise DuplicateCodeError(f"verify source {cls.__name__} has no name or reuses '{name}'")
    for code in cls.codes():
        if not CODE_RE.match(code.id) or not code.id.startswith(cls.prefix):
            raise ValueError(f"verify source '{name}': code {code.id!r} is malformed or not {cls.prefix}xxx")
        owner = _CODES.get(code.id)
        if owner is not None and owner[1] != name:
            raise DuplicateCodeError(f"verify code {code.id} claimed by '{owner[1]}' and '{name}'")
        if owner is not None and owner[0] != code:
            raise DuplicateCodeError(f"verify code {code.id} defined twice in '{name}'")
    ids = [c.id for c in cls.codes()]
    if len(ids) != len(set(ids)):
        raise DuplicateCodeError(f"verify source '{name}' declares a code twice")
    for code in cls.codes():  # only once every code is known to be good
        _CODES[code.id] = (code, name)
    _SOURCES[name] = cls
    return cls


def unregister_source(name: str) -> None:
    """Remove a source and its codes (for tests that register an example source)."""
    _SOURCES.pop(name, None)
    for cid in [c for c, (_, owner) in _CODES.items() if owner == name]:
        del _CODES[cid]


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for mod in BUILTIN:
        importlib.import_module(mod)
    load_plugins(entry_points(group=ENTRY_POINTS))


def load_plugins(eps: Iterable[Any]) -> None:
    """Import the sources other packages declare under the `archkit.verify_sources` entry points.

    Loading the entry point's object (a module or the Source class) runs its `@register_source`.
    """
    for ep in sorted(eps, key=lambda e: e.name):
        ep.load()


def sources() -> list[type[Source]]:
    """Every registered source: the built-in ones in report order, then the others by name."""
    _load()
    builtin = [s for s in _SOURCES.values() if s.__module__ in BUILTIN]
    builtin.sort(key=lambda s: BUILTIN.index(s.__module__))
    return builtin + sorted((s for s in _SOURCES.values() if s not in builtin), key=lambda s: s.name)


def source(name: str) -> type[Source] | None:
    _load()
    return _SOURCES.get(name)


def all_codes() -> dict[str, tuple[Code, str]]:
    """code id -> (Code, source name) for every registered check, in source order."""
    _load()
    order = {s.name: i for i, s in enumerate(sources())}
    return dict(sorted(_CODES.items(), key=lambda kv: (order.get(kv[1][1], 99), kv[0])))


def code(code_id: str) -> Code | None:
    _load()
    entry = _CODES.get(code_id)
    return entry[0] if entry else None


def all_options() -> list[Option]:
    """Every source's options, in source order (names are unique across sources)."""
    seen: dict[str, Option] = {}
    for src in sources():
        for opt in src.options:
            if opt.name in seen and seen[opt.name] != opt:
                raise DuplicateCodeError(f"verify option {opt.cli} declared by two sources")
            seen.setdefault(opt.name, opt)
    return list(seen.values())
