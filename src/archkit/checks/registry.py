"""The rule registry: one module per rule, registered by code, duplicates refused."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from importlib.metadata import entry_points
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from archkit.diagnostics import Diagnostic, Severity
from archkit.errors import ArchkitError
from archkit.isolation import Failure, isolated
from archkit.spec.loader import file_of, source_of
from archkit.spec.model import Node, Spec
from archkit.spec.sourcemap import SourceMap, format_path, parse_path

CODE_RE = re.compile(r"^AK[1-9][0-9]{2}$")
# A rule or a generator that raised (`archkit.isolation`): reported as a finding so that the
# others still run.
INTERNAL_ERROR = "AK199"
FAMILIES = {
    "AK1": "spec structure",
    "AK2": "latency and capacity",
    "AK3": "topology",
    "AK4": "resilience",
    "AK5": "security and compliance",
    "AK6": "observability",
    "AK7": "LLM serving",
}


class DuplicateRuleError(ArchkitError, RuntimeError):
    """Two rules claim the same code."""


class RuleSettings(BaseModel):
    """Base of a rule's settings (`checks.settings.CODE` in the spec): typed fields with defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)


S = TypeVar("S", bound=RuleSettings)


class Rule:
    """Base class of a check: set `code`, `name`, `severity`, `source`, `rationale`; write `check`.

    The class docstring's first line is the rule's summary (shown by `archkit rules`).
    `source` cites where the rule comes from (a seed section, a doc). A threshold a team may
    choose goes into `Settings` (a `RuleSettings` subclass with defaults), read in `check` with
    `ctx.settings(self.Settings)`; the spec sets it as `checks: {settings: {CODE: {...}}}`.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.ERROR
    source: ClassVar[str] = ""
    rationale: ClassVar[str] = ""
    Settings: ClassVar[type[RuleSettings]] = RuleSettings
    # Top-level spec sections the rule reads that its code does not name (`checks.reads` finds the
    # rest in the code); a family is skipped on a partly loaded spec when one of them is broken.
    reads: ClassVar[frozenset[str]] = frozenset()

    def check(self, ctx: Context) -> Iterable[Diagnostic]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or cls.name).strip().splitlines()[0].strip()

    @classmethod
    def explain(cls) -> str:
        body = [f"{cls.code} {cls.name} ({cls.severity.value}, {family_of(cls.code)})", "", cls.summary()]
        if cls.rationale:
            body += ["", cls.rationale.strip()]
        if cls.Settings.model_fields:
            body += ["", f"Settings (checks: {{settings: {{{cls.code}: {{...}}}}}}):"]
            for fname, f in cls.Settings.model_fields.items():
                body.append(f"  {fname} = {f.default!r}" + (f"  {f.description}" if f.description else ""))
        if cls.source:
            body += ["", f"Source: {cls.source}"]
        return "\n".join(body) + "\n"


def family_of(code: str) -> str:
    return FAMILIES.get(code[:3], "other")


_REGISTRY: dict[str, type[Rule]] = {}
_LOADED = False


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: add a rule to the registry; refuses bad or duplicate codes."""
    code = getattr(cls, "code", "")
    if not CODE_RE.match(code):
        raise ValueError(f"rule {cls.__name__} has a malformed code {code!r}")
    if code in _REGISTRY and _REGISTRY[code] is not cls:
        raise DuplicateRuleError(
            f"rule code {code} registered twice: {_REGISTRY[code].__module__} and {cls.__module__}"
        )
    _REGISTRY[code] = cls
    return cls


ENTRY_POINTS = "archkit.rules"


def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule by code: the `archkit.checks.akNNN*` modules, then the rules other
    distributions declare under the `archkit.rules` entry point group, imported once."""
    global _LOADED
    if not _LOADED:
        import archkit.checks as pkg

        for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            if re.match(r"^ak[1-9][0-9]{2}", mod.name):
                importlib.import_module(f"archkit.checks.{mod.name}")
        _LOADED = True
        for ep in sorted(entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
            # `NAME = package.module` (its @register runs) or `NAME = package.module:RuleClass`
            value = ep.load()
            if isinstance(value, type) and issubclass(value, Rule):
                register(value)
    return dict(sorted(_REGISTRY.items()))


def rule_meta() -> dict[str, dict[str, str]]:
    return {
        code: {"name": r.name, "summary": r.summary(), "help": r.explain(), "severity": r.severity.value}
        for code, r in all_rules().items()
    }


@dataclass
class Context:
    """What a rule sees: the spec, where its parts are in the file, shared derived data."""

    spec: Spec
    rule: type[Rule] | None = None
    cache: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def source(self) -> SourceMap:
        return source_of(self.spec)

    @property
    def file(self) -> str:
        return file_of(self.spec)

    def settings(self, model: type[S]) -> S:
        """The current rule's settings from the spec's `checks.settings`, defaults where unset.

        Values that do not validate fall back to the defaults; AK113 reports them.
        """
        rule = self.rule
        assert rule is not None, "Context.settings used outside a rule"
        given = self.spec.checks.settings.get(rule.code) or {}
        try:
            return model.model_validate(given)
        except ValidationError:
            return model()

    def memo(self, key: str, fn: Callable[[], Any]) -> Any:
        """Compute shared derived data once per check run (e.g. the queueing analysis)."""
        if key not in self.cache:
            self.cache[key] = fn()
        return self.cache[key]

    def at(
        self,
        obj: Node | tuple[Any, ...],
        field_name: str | None = None,
        message: str = "",
        *,
        severity: Severity | None = None,
        hint: str = "",
        key: bool = False,
        **extra: Any,
    ) -> Diagnostic:
        """A diagnostic of the current rule located at `obj` (or its field)."""
        path = obj if isinstance(obj, tuple) else obj.spec_path
        if field_name is not None:
            path = path + (field_name,)
        loc = self.source.at(path, key=key)
        rule = self.rule
        assert rule is not None, "Context.at used outside a rule"
        return Diagnostic(
            rule.code,
            severity or rule.severity,
            message,
            self.file,
            loc.line,
            loc.col,
            format_path(path),
            hint,
            extra,
        )


def _selected(code: str, select: list[str], ignore: list[str]) -> bool:
    """Code prefixes, case-insensitive: `ak2` selects the AK2xx family."""
    if select and not any(code.startswith(s.upper()) for s in select):
        return False
    return not any(code.startswith(i.upper()) for i in ignore)


def selected_codes(spec: Spec, select: list[str] | None = None, ignore: list[str] | None = None) -> set[str]:
    """The codes `run_rules` would run on `spec`: the options' and the spec's `checks` select/ignore."""
    select = list(select or []) + list(spec.checks.select)
    ignore = list(ignore or []) + list(spec.checks.ignore)
    return {code for code in all_rules() if _selected(code, select, ignore)}


def split_suppressed(spec: Spec, diags: Iterable[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """(active, suppressed): a finding whose line, or its enclosing object's line, carries an
    `# archkit: ignore[CODE] reason` comment naming its code is suppressed, with that reason."""
    smap = source_of(spec)
    if not smap.ignores:  # the common case: no suppression comment in the file
        return list(diags), []
    active: list[Diagnostic] = []
    suppressed: list[Diagnostic] = []
    for d in diags:
        reason = smap.suppression(d.code, parse_path(d.path), d.line) if d.file == smap.file else None
        if reason is None:
            active.append(d)
        else:
            suppressed.append(replace(d, suppressed=reason))
    return active, suppressed


def internal_error(failure: Failure, file: str) -> Diagnostic:
    """A rule or a generator that raised: an AK199 error on the spec's first line, naming it."""
    return Diagnostic(INTERNAL_ERROR, Severity.ERROR, failure.message, file)


def run_rules(
    spec: Spec,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    families: set[str] | None = None,
    suppressed: list[Diagnostic] | None = None,
) -> list[Diagnostic]:
    """Run every selected rule on a loaded spec (code prefixes: AK2 selects a family).

    `families` (e.g. {"AK1", "AK3"}) limits the run to those rule groups. Findings suppressed by
    an `# archkit: ignore[CODE] reason` comment are left out; `suppressed` (a list) collects them.
    """
    select = list(select or []) + list(spec.checks.select)
    ignore = list(ignore or []) + list(spec.checks.ignore)
    ctx = Context(spec)
    out: list[Diagnostic] = []
    for code, rule_cls in all_rules().items():
        if not _selected(code, select, ignore) or (families is not None and code[:3] not in families):
            continue
        ctx.rule = rule_cls
        # a broken rule must not hide the others' findings (what it found before raising stays)
        failed = isolated("rule", code, partial(_check, rule_cls, ctx, out))
        if isinstance(failed, Failure):
            out.append(internal_error(failed, ctx.file))
    active, dropped = split_suppressed(spec, out)
    if suppressed is not None:
        suppressed.extend(dropped)
    return active


def _check(rule_cls: type[Rule], ctx: Context, out: list[Diagnostic]) -> None:
    out.extend(rule_cls().check(ctx))


def run_partial(
    spec: Spec,
    broken: set[str],
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    suppressed: list[Diagnostic] | None = None,
) -> tuple[list[Diagnostic], dict[str, list[str]]]:
    """Rules on a spec whose `broken` top-level sections lost values to schema errors.

    Structure rules (AK1) always run; every other group runs when none of the sections its rules
    read (`checks.reads.family_inputs`) is broken. Returns the findings and, per skipped group, the
    broken sections it needs.
    """
    from archkit.checks.reads import family_inputs

    inputs = family_inputs(all_rules().values())
    families = {code[:3] for code in all_rules()}
    chosen = list(select or []) + list(spec.checks.select)
    dropped = list(ignore or []) + list(spec.checks.ignore)
    wanted = {code[:3] for code in all_rules() if _selected(code, chosen, dropped)}
    skipped: dict[str, list[str]] = {}
    for fam in sorted(wanted - {"AK1"}):
        hit = sorted(broken & inputs[fam])
        if hit:
            skipped[fam] = hit
    diags = run_rules(spec, select, ignore, families=families - set(skipped), suppressed=suppressed)
    return diags, skipped
