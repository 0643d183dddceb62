"""The `config` generator: the spec's configuration parameters per environment (seed 000 §4.2).

For the default values and each environment of the spec, `config/<env>/consul-kv.json` is the
`consul kv import` format (a JSON array of {key, flags, value} with the value base64-encoded;
flags 1 marks a parameter the service needs at start) and `config/<env>/app.env` is the same
values as KEY=value lines for a container's env file or a systemd EnvironmentFile. Keys live
under `config.prefix` (default: the spec's name). A required parameter with no value in an
environment is left out of that environment's files and named in a comment of its env file.
"""

from __future__ import annotations

import base64
import json
import re

from archkit.generators.registry import RenderContext, register
from archkit.spec.config import DEFAULT_ENV, text_of, value_in


def env_name(key: str) -> str:
    """A key as an environment variable: 'risk/borderline-band' -> RISK_BORDERLINE_BAND."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", key).strip("_").upper()
    return name if name and not name[0].isdigit() else "_" + name


def _shell(value: str) -> str:
    """A value for an env file: single-quoted when it holds anything beyond a plain word."""
    if re.fullmatch(r"[A-Za-z0-9_./:@%+,-]*", value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


@register(
    "config",
    order=68,
    source="seed 000 §4.2 (parameters drawn on the diagram live in a configuration store per environment)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Configuration-store export per environment: Consul KV import JSON and env files."""
    cfg = ctx.spec.config
    if cfg is None or not cfg.params:
        return {}
    prefix = (cfg.prefix or ctx.spec.metadata.name).strip("/")
    out: dict[str, str] = {}
    for env in [DEFAULT_ENV, *(e.id for e in ctx.spec.environments)]:
        kv, lines, missing = [], [ctx.header("#")], []
        for p in sorted(cfg.params, key=lambda q: q.key):
            value = value_in(p, env)
            if value is None:
                if p.required_at_start:
                    missing.append(p.key)
                continue
            text = text_of(value)
            kv.append(
                {
                    "key": f"{prefix}/{p.key}",
                    "flags": 1 if p.required_at_start else 0,
                    "value": base64.b64encode(text.encode("utf-8")).decode("ascii"),
                }
            )
            note = " (required at start)" if p.required_at_start else ""
            lines.append(f"# {p.key}{note}: {' '.join((p.description or '').split())}".rstrip(": "))
            lines.append(f"{env_name(p.key)}={_shell(text)}")
        if missing:
            lines.append(f"# NOT SET in {env}, required at start: {', '.join(missing)}")
        out[f"config/{env}/consul-kv.json"] = json.dumps(kv, indent=2, ensure_ascii=True) + "\n"
        out[f"config/{env}/app.env"] = "\n".join(lines) + "\n"
    return out
