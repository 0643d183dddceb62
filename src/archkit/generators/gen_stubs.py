"""The `stubs` generator: the control flow as Python functions and the tests that hold them to it.

Seed 000 §3.2: each decision node is one function named after it whose first line sets its
timeout. `stubs/controlflow.py` has one function per decision and call (`archkit.plans.code_contract`):
the first line of its body sets the spec's timeout, the next ones its retries and backoff, its
circuit breaker and its fallback node, and it hands them to the shared wiring in
`stubs/resilience.py`. `stubs/test_controlflow.py` proves, per function, that a callee slower than
the timeout is abandoned and the fallback node taken, that errors are retried as declared and that
an answer goes on to the next node. `archkit verify --code stubs/` reads the functions back with
`ast` and reports any whose timeout, retries or fallback differ from the spec.
"""

from __future__ import annotations

import json

from archkit.generators.jinja import render
from archkit.generators.registry import RenderContext, register
from archkit.plans.code_contract import FunctionContract, code_contract
from archkit.spec.sourcemap import format_path

# The generated tests run each function with its timeout scaled to this many milliseconds, so the
# whole suite takes seconds however long the spec's timeouts are (resilience.TIME_SCALE).
TEST_TIMEOUT_MS = 60.0


def _lit(value: object) -> str:
    """A Python literal for a number, string, bool or None (repr is valid Python for these)."""
    if isinstance(value, float) and value.is_integer():
        return f"{value:.1f}"
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid Python string literal, double-quoted
    return repr(value)


def _doc(text: str) -> str:
    """Text safe inside a triple-quoted docstring, on one line, ending in one full stop."""
    one = " ".join(text.replace("\\", "\\\\").replace('"""', "'''").split()).rstrip(".")
    return one if one.endswith(("?", "!")) else one + "."


def breaker_name(fc: FunctionContract) -> str:
    return f"BREAKER_{fc.function}"


def _function(fc: FunctionContract) -> str:
    where = format_path(tuple(fc.node.spec_path))
    if fc.kind == "decision":
        doc = f"Decision '{fc.node_id}' ({where}): {fc.label}"
        args = "request: Any, criterion: Callable[[Any], str]"
    else:
        doc = f"Call '{fc.node_id}' to '{fc.target}' ({where}): {fc.label}"
        args = "request: Any, target: Callable[[Any], Any]"
    lines = [
        f"def {fc.function}({args}) -> Outcome:",
        f'    """{_doc(doc)}"""',
        f"    timeout_ms = {_lit(fc.timeout_ms)}",
    ]
    if fc.kind == "decision":
        branches = ", ".join(f"{_lit(w)}: {_lit(n)}" for w, n in fc.branches)
        lines += [
            f"    branches = {{{branches}}}",
            f"    fallback = {_lit(fc.fallback)}",
            "    return run_decision(",
            f"        {_lit(fc.node_id)}, criterion, request, timeout_ms=timeout_ms, branches=branches, fallback=fallback",
            "    )",
        ]
    else:
        lines += [
            f"    retries = {fc.retries}",
            f"    backoff_ms = {_lit(fc.backoff_ms)}",
            f"    backoff_multiplier = {_lit(fc.backoff_multiplier)}",
            f"    jitter = {fc.jitter}",
            f"    breaker = {breaker_name(fc) if fc.breaker else 'None'}",
            f"    fallback = {_lit(fc.fallback)}",
            "    return run_call(",
            f"        {_lit(fc.node_id)},",
            "        target,",
            "        request,",
            "        timeout_ms=timeout_ms,",
            "        retries=retries,",
            "        backoff_ms=backoff_ms,",
            "        backoff_multiplier=backoff_multiplier,",
            "        jitter=jitter,",
            "        breaker=breaker,",
            "        fallback=fallback,",
            f"        next_node={_lit(fc.next)},",
            "    )",
        ]
    return "\n".join(lines) + "\n"


def _breakers(contracts: tuple[FunctionContract, ...]) -> list[str]:
    out = []
    for fc in contracts:
        b = fc.breaker
        if b is not None:
            out.append(
                f"{breaker_name(fc)} = CircuitBreaker({_lit(b.error_rate_threshold)}, {_lit(b.window_s)}, "
                f"{_lit(b.open_s)}, {b.min_requests})"
            )
    return out


@register(
    "stubs",
    order=67,
    source="seed 000 §3.2 (each decision is one function that starts with its timeout: the diagram is a code contract)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Control-flow code stubs: a function per decision and call, with the tests that prove them."""
    contracts = code_contract(ctx.spec)
    if not contracts:
        return {}
    header = ctx.header("#")
    functions = "\n\n".join(_function(fc) for fc in contracts)
    tests = [
        {
            "fc": fc,
            "scale": (TEST_TIMEOUT_MS / fc.timeout_ms) if fc.timeout_ms else 1.0,
            "timeout": _lit(fc.timeout_ms),
            "first_when": _lit(fc.branches[0][0]) if fc.branches else None,
            "first_next": _lit(fc.branches[0][1]) if fc.branches else None,
            "fallback": _lit(fc.fallback),
            "next": _lit(fc.next),
            "breaker": breaker_name(fc) if fc.breaker else None,
        }
        for fc in contracts
    ]
    values = {"header": header, "spec": ctx.spec.metadata.name, "test_timeout_ms": TEST_TIMEOUT_MS}
    return {
        "stubs/resilience.py": render("stubs/resilience.py.j2", ctx.templates_dir, **values),
        "stubs/controlflow.py": render(
            "stubs/controlflow.py.j2",
            ctx.templates_dir,
            functions=functions,
            breakers=_breakers(contracts),
            **values,
        ),
        "stubs/test_controlflow.py": render(
            "stubs/test_controlflow.py.j2", ctx.templates_dir, tests=tests, **values
        ),
    }
