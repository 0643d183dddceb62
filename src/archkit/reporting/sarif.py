"""The one SARIF 2.1.0 writer, for check diagnostics, verify findings and load-test verdicts.

Passing results are left out (code-scanning tools list problems). Each result carries its fix
hint (SARIF's `fix` object needs concrete file edits, so the hint travels in the message, after
" — ", as `archkit check`'s text form prints it, and as the `hint` property); each rule carries
its title, rationale and source when the caller knows them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archkit.diagnostics import Outcome
from archkit.reporting.located import Located

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Outcome.ERROR: "error", Outcome.WARNING: "warning", Outcome.NOTE: "note", Outcome.UNKNOWN: "note"}


@dataclass(frozen=True)
class RuleInfo:
    """What SARIF shows about a code: its name, one-line summary, rationale, source, default level."""

    name: str = ""
    summary: str = ""
    help: str = ""
    source: str = ""
    level: Outcome | None = None
    properties: Mapping[str, str] | None = None
    explain: str = ""  # the long form (SARIF `help`): what `archkit explain CODE` prints


def sarif(
    results: Iterable[Located],
    tool: str,
    version: str = "",
    rules: Mapping[str, RuleInfo] | None = None,
) -> str:
    """A SARIF 2.1.0 log with one run of `tool`: a rule per known or used code, a result per problem."""
    rules = rules or {}
    items = [r for r in results if r.outcome is not Outcome.PASS]
    used = sorted({r.code for r in items} | set(rules))
    index = {code: i for i, code in enumerate(used)}
    driver_rules = [_rule(code, rules.get(code)) for code in used]
    out = []
    for r in items:
        text = r.message + (f" ({r.path})" if r.path else "") + (f" — {r.hint}" if r.hint else "")
        result: dict[str, Any] = {
            "ruleId": r.code,
            "ruleIndex": index[r.code],
            "kind": "review" if r.outcome is Outcome.UNKNOWN else "fail",
            "level": _LEVEL[r.outcome],
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": r.file},
                        "region": {"startLine": max(1, r.line), "startColumn": max(1, r.col)},
                    }
                }
            ],
        }
        reason = getattr(r, "suppressed", "")
        if reason:  # SARIF 2.1.0 §3.35: a result silenced in the source, with its justification
            result["suppressions"] = [{"kind": "inSource", "justification": reason}]
        props = {"group": r.group, "path": r.path, "hint": r.hint, **dict(getattr(r, "properties", {}) or {})}
        props = {k: v for k, v in props.items() if v}
        if props:
            result["properties"] = props
        out.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {"tool": {"driver": {"name": tool, "version": version, "rules": driver_rules}}, "results": out}
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _rule(code: str, info: RuleInfo | None) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": code, "name": (info.name if info else "") or code}
    if info is None:
        return rule
    rule["shortDescription"] = {"text": info.summary or code}
    if info.help:
        rule["fullDescription"] = {"text": info.help}
    if info.explain:
        rule["help"] = {"text": info.explain}
    if info.level is not None and info.level in _LEVEL:
        rule["defaultConfiguration"] = {"level": _LEVEL[info.level]}
    props = {**({"source": info.source} if info.source else {}), **dict(info.properties or {})}
    if props:
        rule["properties"] = props
    return rule
