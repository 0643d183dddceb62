"""The code source: Python functions of the control flow against the spec (seed 000 §3.2), read with `ast`.

Seed 000 §3.2 makes the control-flow diagram a code contract: each decision (and call) is one
function named after its node, whose first line sets its timeout. `archkit verify SPEC --code DIR`
finds those functions in DIR's Python files (nothing is imported or run) and compares what they set
— `timeout_ms` on the first line, `retries` and `backoff_ms`, `breaker`, `fallback` — with the plan
the `stubs` generator renders (`archkit.plans.code_contract`). Each finding names the spec line and
the code line.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archkit.plans.code_contract import Breaker, FunctionContract, code_contract
from archkit.spec.model import Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.state import StateError

_UNSET = object()


@dataclass
class Function:
    """One function found in the code: where it is and the literal values its body assigns."""

    path: Path
    node: ast.FunctionDef | ast.AsyncFunctionDef
    first: str | None  # the name the first statement (after the docstring) assigns
    values: dict[str, tuple[int, Any]]  # name -> (line, literal value or _UNSET when not a literal)
    module: dict[str, ast.expr]  # module-level assignments of its file (breakers)

    def at(self, name: str | None = None) -> str:
        line = self.values[name][0] if name and name in self.values else self.node.lineno
        return f"{self.path}:{line}"


def _assigned(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id, stmt.value
    return None


def _literal(expr: ast.expr) -> Any:
    if isinstance(expr, ast.Name):
        return expr  # a reference (a module-level breaker), resolved by the breaker check
    try:
        return ast.literal_eval(expr)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNSET


def read_functions(root: Path, wanted: set[str]) -> tuple[dict[str, Function], list[str]]:
    """The functions named in `wanted` under root (a folder or a file), and files that do not parse."""
    if not root.exists():
        raise StateError(f"{root}: not found (give the folder or file of the control-flow code)")
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*.py") if p.is_file())
    found: dict[str, Function] = {}
    broken: list[str] = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
            broken.append(f"{path}: {exc}")
            continue
        module = {a[0]: a[1] for stmt in tree.body if (a := _assigned(stmt)) is not None}
        for fn in tree.body:
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) or fn.name not in wanted:
                continue
            if fn.name in found:
                continue  # the first definition (in path order) is the one checked
            body = list(fn.body)
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                body = body[1:]  # the docstring
            first = _assigned(body[0]) if body else None
            values: dict[str, tuple[int, Any]] = {}
            for stmt in body:
                a = _assigned(stmt)
                if a is not None and a[0] not in values:
                    values[a[0]] = (stmt.lineno, _literal(a[1]))
            found[fn.name] = Function(path, fn, first[0] if first else None, values, module)
    return found, broken


class CodeCheck(Check):
    """A check of one control-flow function against its contract."""

    def run(self, rec: Recorder, fc: FunctionContract, fn: Function) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


def _label(fc: FunctionContract) -> str:
    return f"{fc.kind} {fc.node_id}"


class FunctionPresent(Check):
    """Each decision and call has a function named after it."""

    code = Code(
        "VC410",
        "function present",
        "Each decision and call of the control flow is one function named after its node.",
        "seed 000 §3.2",
    )


class TimeoutFirst(CodeCheck):
    """The function's first line sets the spec's timeout."""

    code = Code(
        "VC411",
        "timeout on the first line",
        "The first line of a decision's or call's function sets its timeout (timeout_ms), as declared.",
        "seed 000 §3.2",
    )

    def run(self, rec: Recorder, fc: FunctionContract, fn: Function) -> None:
        have = fn.values.get("timeout_ms", (0, _UNSET))[1]
        where = fn.at("timeout_ms")
        if fn.first != "timeout_ms":
            _emit(
                rec,
                False,
                TimeoutFirst.code,
                _label(fc),
                fc.node,
                "timeout_ms",
                f"{fn.node.name}() does not set timeout_ms on its first line"
                + (f" (it sets {fn.first} first)" if fn.first else "")
                + f"; the spec declares {_ms(fc.timeout_ms)} (seed 000 §3.2)",
                where,
            )
        elif have is _UNSET or not _same(have, fc.timeout_ms):
            _emit(
                rec,
                False,
                TimeoutFirst.code,
                _label(fc),
                fc.node,
                "timeout_ms",
                f"{fn.node.name}() sets timeout_ms {_show(have)}, the spec declares {_ms(fc.timeout_ms)}",
                where,
            )
        else:
            _emit(
                rec,
                True,
                TimeoutFirst.code,
                _label(fc),
                fc.node,
                "timeout_ms",
                f"timeout_ms {_ms(fc.timeout_ms)}",
                where,
            )


class Retries(CodeCheck):
    """A call retries as declared (count and first backoff)."""

    code = Code(
        "VC412",
        "retries",
        "A call's retries and backoff in code are the spec's: more retries than declared multiply the load "
        "on a failing callee and outlast the caller's budget.",
        "seed 000 §3.2",
    )

    def run(self, rec: Recorder, fc: FunctionContract, fn: Function) -> None:
        if fc.kind != "call":
            return
        retries = fn.values.get("retries", (0, _UNSET))[1]
        backoff = fn.values.get("backoff_ms", (0, _UNSET))[1]
        problems = []
        if retries is _UNSET or not _same(retries, fc.retries):
            problems.append(f"retries {_show(retries)} instead of {fc.retries}")
        if fc.retries and (backoff is _UNSET or not _same(backoff, fc.backoff_ms)):
            problems.append(f"backoff_ms {_show(backoff)} instead of {fc.backoff_ms:g}")
        fld = "retry" if getattr(fc.node, "retry", None) is not None else None
        if problems:
            _emit(
                rec,
                False,
                Retries.code,
                _label(fc),
                fc.node,
                fld,
                f"{fn.node.name}(): {'; '.join(problems)}",
                fn.at("retries"),
            )
        else:
            _emit(
                rec, True, Retries.code, _label(fc), fc.node, fld, f"{fc.retries} retries", fn.at("retries")
            )


class Fallback(CodeCheck):
    """The function falls back to the declared node."""

    code = Code(
        "VC413",
        "fallback",
        "On failure the function goes to the node the spec declares (on_failure), the degraded path the "
        "fault tree and the load test's chaos level expect.",
        "seed 000 §3.2",
    )

    def run(self, rec: Recorder, fc: FunctionContract, fn: Function) -> None:
        have = fn.values.get("fallback", (0, _UNSET))[1]
        if have is _UNSET or have != fc.fallback:
            _emit(
                rec,
                False,
                Fallback.code,
                _label(fc),
                fc.node,
                "on_failure",
                f"{fn.node.name}() falls back to {_show(have)}, the spec declares {fc.fallback!r}",
                fn.at("fallback"),
            )
        else:
            _emit(
                rec,
                True,
                Fallback.code,
                _label(fc),
                fc.node,
                "on_failure",
                f"fallback {fc.fallback!r}",
                fn.at("fallback"),
            )


class BreakerWired(CodeCheck):
    """A call has the declared circuit breaker, with its settings (and none where none is declared)."""

    code = Code(
        "VC414",
        "circuit breaker",
        "A call declared with a circuit breaker has one in code with the declared threshold, window, "
        "open time and minimum requests.",
        "seed 004 §2.1",
    )

    def run(self, rec: Recorder, fc: FunctionContract, fn: Function) -> None:
        if fc.kind != "call":
            return
        have = fn.values.get("breaker", (0, _UNSET))[1]
        settings = _breaker_settings(have, fn.module)
        want = fc.breaker
        fld = "circuit_breaker" if want is not None else None
        if want is None:
            ok = have is None or have is _UNSET
            text = (
                "no circuit breaker"
                if ok
                else f"{fn.node.name}() has a circuit breaker the spec does not declare"
            )
        else:
            ok = settings == _breaker_tuple(want)
            text = (
                "circuit breaker as declared"
                if ok
                else f"{fn.node.name}() has circuit breaker {settings or _show(have)}, the spec declares "
                f"{_breaker_tuple(want)} (threshold, window_s, open_s, min_requests)"
            )
        if ok:
            _emit(rec, True, BreakerWired.code, _label(fc), fc.node, fld, text, fn.at("breaker"))
        else:
            _emit(rec, False, BreakerWired.code, _label(fc), fc.node, fld, text, fn.at("breaker"))


def _breaker_tuple(b: Breaker) -> tuple[float, float, float, int]:
    return (b.error_rate_threshold, b.window_s, b.open_s, b.min_requests)


def _breaker_settings(have: Any, module: dict[str, ast.expr]) -> tuple[Any, ...] | None:
    """The positional literal arguments of the CircuitBreaker(...) a function's `breaker` names."""
    expr = module.get(have.id) if isinstance(have, ast.Name) else None
    if not isinstance(expr, ast.Call):
        return None
    try:
        return tuple(ast.literal_eval(a) for a in expr.args)
    except (ValueError, TypeError, SyntaxError):
        return None


def _same(have: Any, want: float | int | None) -> bool:
    if want is None or have is None:
        return have is want
    return isinstance(have, int | float) and not isinstance(have, bool) and abs(float(have) - want) < 1e-9


def _ms(v: float | None) -> str:
    return "no timeout" if v is None else f"{v:g} ms"


def _show(v: Any) -> str:
    if v is _UNSET:
        return "nothing (not set to a literal)"
    if isinstance(v, ast.Name):
        return v.id
    return repr(v)


CODE_CHECKS: tuple[type[CodeCheck], ...] = (TimeoutFirst, Retries, Fallback, BreakerWired)


def _emit(
    rec: Recorder, ok: bool, code: Code, label: str, node: Any, fld: str | None, message: str, where: str = ""
) -> None:
    """One finding: pass or drift, at the spec node's field and the code's file:line."""
    (rec.ok if ok else rec.drift)(code, label, node, message, field=fld, where=where)


def check_code(spec: Spec, root: Path) -> list[Finding]:
    """Every decision and call of the spec against the functions under root."""
    rec = Recorder(spec, "code")
    contracts = code_contract(spec)
    found, broken = read_functions(root, {fc.function for fc in contracts})
    for fc in contracts:
        fn = found.get(fc.function)
        if fn is None:
            note = f" ({len(broken)} file(s) did not parse: {broken[0]})" if broken else ""
            _emit(
                rec,
                False,
                FunctionPresent.code,
                _label(fc),
                fc.node,
                None,
                f"no function {fc.function}() for {fc.kind} '{fc.node_id}' under {root}{note} (seed 000 §3.2)",
            )
            continue
        _emit(rec, True, FunctionPresent.code, _label(fc), fc.node, None, f"{fc.function}()", fn.at())
        for chk in CODE_CHECKS:
            chk().run(rec, fc, fn)
    return rec.findings


@register_source
class CodeSource(Source):
    """Python code of the control flow (e.g. render's stubs/), read with `ast`, never imported."""

    name = "code"
    title = "Control-flow code"
    prefix = "VC"
    options = (
        Option(
            "code",
            "Folder (or file) of Python code with one function per decision and call, e.g. render's stubs/.",
            metavar="DIR",
        ),
    )
    docs = (
        DocRow(
            "`--code DIR`",
            "Python files under DIR, parsed with `ast` (not imported)",
            "per decision and call, the function named after it: timeout_ms on its first line, retries and "
            "backoff_ms, breaker, fallback against the spec; each finding names the spec line and the code line.",
        ),
    )
    checks = (FunctionPresent, *CODE_CHECKS)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return Path(options["code"])

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": self.name, "source": str(given)}, check_code(spec, given))
