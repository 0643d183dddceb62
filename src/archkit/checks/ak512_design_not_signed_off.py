"""AK512: a design with compliance checkpoints has no sign-off for its current version."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Spec


def design_sha256(spec: Spec) -> str:
    """SHA-256 of what the spec's author wrote (defaults left out), less `metadata.signoffs`.

    The fields written, not the file's bytes: comments and layout do not change the design, a
    default archkit adds later does not invalidate a sign-off, and the sign-off cannot contain
    the hash of a text that contains it.
    """
    doc = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    doc.get("metadata", {}).pop("signoffs", None)
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@register
class DesignNotSignedOff(Rule):
    """Stages carry compliance tags but no sign-off of the required roles approves the spec as it is now."""

    code = "AK512"
    name = "design-not-signed-off"
    severity = Severity.WARNING
    source = "seed 000 §2.4 (a compliance layer on the diagram; legal signs it off at every review)"
    rationale = """
Seed 000 §2.4 added a compliance-checkpoint layer to the diagram (each data node tagged
`[GDPR Art.9]` or `[PIPL Sec.28]`), and every architecture review must be signed off by legal.
When any stage declares `compliance` tags, `metadata.signoffs` must hold a sign-off by each
role in `Settings.roles` whose `spec_sha256` is the design's current hash: the SHA-256 of
every field written in the spec except the sign-offs (comments and layout do not count). A
change after the review makes the sign-off stale; the finding prints the current hash to sign.
Not judged under `check --env`, whose overrides change the design being hashed.
"""

    class Settings(RuleSettings):
        roles: list[str] = Field(
            default_factory=lambda: ["legal"], description="roles whose sign-off the current design needs"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        tagged = [s for s in spec.dataflow.stages if s.compliance]
        if not tagged or spec.applied_environment is not None:
            return
        current = design_sha256(spec)
        signoffs = spec.metadata.signoffs
        for role in ctx.settings(self.Settings).roles:
            mine = [s for s in signoffs if s.role.lower() == role.lower()]
            if any(s.spec_sha256 == current for s in mine):
                continue
            if not mine:
                yield ctx.at(
                    spec.metadata,
                    None,
                    f"stage '{tagged[0].id}' carries compliance tags but no {role} sign-off is recorded "
                    f"(metadata.signoffs); the design to sign is {current}",
                )
                continue
            last = max(mine, key=lambda s: s.date)
            yield ctx.at(
                last,
                "spec_sha256",
                f"{role} signed off {last.date.isoformat()} a design that has changed since: its hash is "
                f"now {current}",
            )
