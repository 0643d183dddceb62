"""What each rule reads of a spec, found in its code, and so what each rule family needs.

On a spec that loaded only in part (`run_partial`), a family runs only when none of the sections
it reads lost a value to a schema error. A hand-kept table of those sections drifted (AK6xx read
`slos` but the table said not), so the sections are found where they are used: every attribute
named like a top-level section of `Spec` (`.slos`, `.topology`) or a lookup into one
(`spec.stage(...)` reads `dataflow`), in the rule's class and in every function it uses, in its
module or imported from the checks' helpers and the performance model (AK2xx), followed
transitively: a helper module's other functions do not count. Reading
more than a rule needs only makes it skip more often on a broken spec, never run on missing data.
A rule whose reads the code does not show (through `getattr`, say) names them in `Rule.reads`.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from archkit.spec.model import Spec

if TYPE_CHECKING:
    from archkit.checks.registry import Rule

# Spec's lookups by id, and the section each one searches.
LOOKUPS = {
    "stage": "dataflow",
    "service": "topology",
    "pool": "topology",
    "control_node": "controlflow",
    "environment": "environments",
    "with_environment": "environments",
    "applied_environment": "environments",
}
# The modules a rule's reads are followed into: the checks' own helpers and the analyses.
FOLLOW = ("archkit.checks", "archkit.perf", "archkit.slo_math", "archkit.calibrate", "archkit.faulttree")
# Not followed: the registry (its own machinery: `Context`, the settings section `checks`).
SKIP = ("archkit.checks.registry", "archkit.checks.reads")


ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the `archkit` package


def _origin(module: str) -> str | None:
    """The source file of an archkit module or package, found without importing it."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return str(path)
    return None


@dataclass(frozen=True)
class _Module:
    defs: dict[str, ast.AST]  # top-level functions, classes and assignments by name
    symbols: dict[str, tuple[str, str]]  # local name -> (source file, name there), followed imports
    modules: dict[str, str]  # local name -> source file of an imported module


@cache
def _parse(path: str) -> _Module:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    defs: dict[str, ast.AST] = {}
    symbols: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    defs[target.id] = node
    # imports anywhere in the module, function-local ones included (helpers import the
    # performance model where they use it)
    for imp in ast.walk(tree):
        if isinstance(imp, ast.ImportFrom) and imp.module and imp.module.startswith(FOLLOW):
            if imp.module.startswith(SKIP):
                continue
            for alias in imp.names:
                local = alias.asname or alias.name
                sub = _origin(f"{imp.module}.{alias.name}")  # `from package import module`
                if sub is not None:
                    modules[local] = sub
                elif (origin := _origin(imp.module)) is not None:
                    symbols[local] = (origin, alias.name)
    return _Module(defs, symbols, modules)


def _reads(path: str, name: str) -> frozenset[str]:
    """The sections that one top-level name of a module reads, following what it uses: the
    module's other functions, and the functions it imports from the followed modules."""
    sections = set(Spec.model_fields)
    out: set[str] = set()
    seen: set[tuple[str, str]] = set()
    todo = [(path, name)]
    while todo:
        where, what = todo.pop()
        if (where, what) in seen:
            continue
        seen.add((where, what))
        mod = _parse(where)
        if what in mod.symbols:  # re-exported from another module
            todo.append(mod.symbols[what])
            continue
        root = mod.defs.get(what)
        if root is None:
            continue
        for node in ast.walk(root):
            if isinstance(node, ast.Attribute):
                if node.attr in sections:
                    out.add(node.attr)
                elif node.attr in LOOKUPS:
                    out.add(LOOKUPS[node.attr])
                if isinstance(node.value, ast.Name) and node.value.id in mod.modules:
                    todo.append((mod.modules[node.value.id], node.attr))  # `common.helper(...)`
            elif isinstance(node, ast.Name):
                if node.id in mod.defs:
                    todo.append((where, node.id))
                elif node.id in mod.symbols:
                    todo.append(mod.symbols[node.id])
    return frozenset(out)


def rule_reads(rule: type[Rule]) -> frozenset[str]:
    """The top-level spec sections a rule reads: found in its class's code and in what that code
    uses, plus `rule.reads`."""
    module = sys.modules.get(rule.__module__)
    path = inspect.getsourcefile(module) if module is not None else None
    found = _reads(path, rule.__name__) if path else frozenset(Spec.model_fields)  # no source: all
    return found | rule.reads


def family_inputs(rules: Iterable[type[Rule]]) -> dict[str, frozenset[str]]:
    """Per rule family (code prefix, e.g. "AK6"), the sections its rules read."""
    out: dict[str, set[str]] = {}
    for rule in rules:
        out.setdefault(rule.code[:3], set()).update(rule_reads(rule))
    return {fam: frozenset(s) for fam, s in sorted(out.items())}
