"""AK113: `checks.settings` names a rule that does not exist, or a value the rule refuses."""

from collections.abc import Iterator

from pydantic import ValidationError

from archkit.checks.registry import Context, Rule, all_rules, register
from archkit.diagnostics import Diagnostic


@register
class RuleSettingsInvalid(Rule):
    """A rule setting names an unknown rule or setting, or a value the rule refuses (its default applies)."""

    code = "AK113"
    name = "rule-settings-invalid"
    source = "archkit: rule settings are validated like the rest of the spec (sqlfluff's per-rule config)"
    rationale = """
A rule's threshold set in `checks: {settings: {CODE: {name: value}}}` replaces its default
(`archkit explain CODE` lists them). A misspelt code, setting or an out-of-range value would
otherwise leave the default in force without a word; the rule runs with its default and this
finding says which setting was not applied.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        checks = ctx.spec.checks
        rules = all_rules()
        base = checks.spec_path + ("settings",)
        for code, given in checks.settings.items():
            rule = rules.get(code)
            if rule is None:
                yield ctx.at(base + (code,), None, f"no rule {code} to configure", key=True)
                continue
            if not rule.Settings.model_fields:
                yield ctx.at(base + (code,), None, f"rule {code} has no settings", key=True)
                continue
            try:
                rule.Settings.model_validate(given)
            except ValidationError as exc:
                for err in exc.errors():
                    field = ".".join(str(p) for p in err["loc"])
                    known = ", ".join(rule.Settings.model_fields)
                    why = (
                        f"no setting {field!r} (it has: {known})"
                        if err["type"] == "extra_forbidden"
                        else err["msg"]
                    )
                    yield ctx.at(
                        base + (code, *err["loc"]),
                        None,
                        f"{code} setting {field}: {why}; the default applies",
                        key=err["type"] == "extra_forbidden",
                    )
