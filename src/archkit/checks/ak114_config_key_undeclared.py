"""AK114: text refers to a configuration parameter (`config:KEY`) that the config section does not declare."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.config import CONFIG_REF
from archkit.spec.model import walk


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)


@register
class ConfigKeyUndeclared(Rule):
    """A `config:KEY` reference names a parameter missing from `config.params`."""

    code = "AK114"
    name = "config-key-undeclared"
    source = "seed 000 §4.2 (every parameter drawn on the diagram lives in the configuration centre, per environment)"
    rationale = """
Seed 000 §4.2 keeps the parameters the diagrams draw — pool sizes, thresholds, consumer group ids —
in a configuration centre with one value per environment, changed through GitOps. A decision's
criterion, a degrade rule or a check command that refers to `config:KEY` depends on that key; when
the `config` section does not declare it, the store export has no value for it and the service
either fails at start or runs on a constant nobody reviews. Declare the key (with its value per
environment) or drop the reference.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        cfg = ctx.spec.config
        declared = {p.key for p in cfg.params} if cfg is not None else set()
        for node in walk(ctx.spec):
            for key in type(node).model_fields:
                seen = set()
                for text in _texts(getattr(node, key)):
                    for m in CONFIG_REF.finditer(text):
                        name = m.group(1).rstrip(".")
                        if name in declared or name in seen:
                            continue
                        seen.add(name)
                        yield ctx.at(
                            node,
                            key,
                            f"'config:{name}' is not declared in config.params",
                            hint=f"add {{key: {name}, value: ...}} to config.params, with its value per environment",
                        )
