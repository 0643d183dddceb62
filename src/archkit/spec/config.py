"""The `config` section: parameters kept in a configuration store per environment (seed 000 §4.2).

Seed 000 §4.2 keeps every parameter the diagrams draw (pool sizes, thresholds, consumer group ids)
in a configuration centre (Consul KV), one value per environment, changed through GitOps rather than
by hand. Each parameter has a key, a value (the default for every environment) and per-environment
overrides, and says whether the service refuses to start without it. Text elsewhere in the spec
refers to a parameter as `config:KEY` (a decision's criterion, a degrade rule's condition, a check
command); rule AK114 reports a reference to a key this section does not declare. The `config`
generator exports the values as `consul kv import` JSON and as env files.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from archkit.spec.model import Id, Node
from archkit.spec.refs import IdOf, RefTo

KEY_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-/]*"
CONFIG_REF = re.compile(r"\bconfig:(" + KEY_PATTERN + r")")  # `config:KEY` in any text of the spec
ConfigKey = Annotated[
    str,
    Field(
        pattern=f"^{KEY_PATTERN}$",
        max_length=256,
        description="a key path: letters, digits, '_', '-', '.', '/' (the Consul KV key under the prefix)",
    ),
]
Scalar = str | int | float | bool


class ConfigParam(Node):
    """One parameter in the configuration store: its default and per-environment values."""

    key: Annotated[ConfigKey, IdOf("config key")]
    service: Annotated[Id, RefTo("service")] | None = Field(None, description="the service that reads it")
    description: str | None = None
    value: Scalar | None = Field(None, description="the value in every environment without its own")
    values: dict[Id, Scalar] = Field(
        default_factory=dict, description="environment id -> the value in that environment"
    )
    required_at_start: bool = Field(
        False, description="the service refuses to start without it (exported with Consul flags 1)"
    )


class Config(Node):
    """Parameters kept in a configuration store, per environment (seed 000 §4.2)."""

    prefix: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-/]*$",
        description="key prefix in the store (default: metadata.name)",
    )
    params: list[ConfigParam] = Field(default_factory=list)


DEFAULT_ENV = "default"  # the values of no environment: each parameter's `value`


def value_in(param: ConfigParam, env: str | None) -> Scalar | None:
    """A parameter's value in an environment (its own, else the default); None when it has none."""
    return param.values.get(env, param.value) if env and env != DEFAULT_ENV else param.value


def text_of(value: Scalar) -> str:
    """A value as a store holds it: booleans as true/false, whole floats without '.0', strings as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
