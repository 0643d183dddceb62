"""The configuration-store source: the live values of the spec's `config` parameters (seed 000 §4.2).

`archkit verify SPEC [--env ENV] --config-store URL` reads every key under the spec's prefix from
a store on loopback and compares it with the value the `config` section gives that environment:
`consul://HOST:PORT` (Consul's KV HTTP API, `GET /v1/kv/PREFIX/?recurse`) or `etcd://HOST:PORT`
(etcd v3's JSON gateway, `POST /v3/kv/range`). A key the spec declares but the store lacks, a
different value, and a key under the prefix the spec does not declare (set by hand, outside
GitOps) are drift. Only loopback addresses are read.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from archkit.spec.config import DEFAULT_ENV, text_of, value_in
from archkit.spec.model import Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.state import StateError


@dataclass(frozen=True)
class Store:
    kind: str  # consul or etcd
    base: str  # http://host:port

    def __str__(self) -> str:
        return f"{self.kind} {self.base}"


def parse_store(url: str) -> Store:
    parts = urlsplit(url)
    if parts.scheme not in ("consul", "etcd") or not parts.hostname or parts.port is None:
        raise StateError(f"--config-store {url}: give consul://HOST:PORT or etcd://HOST:PORT")
    host = parts.hostname
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise StateError(
            f"--config-store {url}: archkit reads configuration stores on loopback addresses only"
        )
    shown = f"[{host}]" if ":" in host else host
    return Store(parts.scheme, f"http://{shown}:{parts.port}")


def _request(url: str, body: bytes | None, timeout_s: float) -> Any:
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # loopback only (parse_store)
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # Consul: no key under the prefix
            return None
        raise StateError(f"{url}: HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise StateError(f"{url}: {exc}") from None


def read_store(store: Store, prefix: str, timeout_s: float) -> dict[str, str]:
    """key (without the prefix) -> value text, for every key under `prefix/`."""
    b64 = base64.b64encode
    out: dict[str, str] = {}
    if store.kind == "consul":
        data = _request(f"{store.base}/v1/kv/{quote(prefix)}/?recurse=true", None, timeout_s) or []
        pairs = [(e.get("Key", ""), e.get("Value")) for e in data]
    else:
        start = f"{prefix}/".encode()
        end = f"{prefix}0".encode()  # '0' follows '/': the range end of the prefix
        body = json.dumps({"key": b64(start).decode(), "range_end": b64(end).decode()}).encode()
        data = _request(f"{store.base}/v3/kv/range", body, timeout_s) or {}
        pairs = [(base64.b64decode(e["key"]).decode(), e.get("value")) for e in data.get("kvs") or []]
    for key, value in pairs:
        if key.startswith(prefix + "/"):
            out[key[len(prefix) + 1 :]] = base64.b64decode(value).decode("utf-8", "replace") if value else ""
    return out


class ParamValue(Check):
    """Each declared parameter is in the store with the environment's value."""

    code = Code(
        "VS510",
        "parameter value",
        "Each parameter of the config section is in the store with the value the spec gives this environment.",
        "seed 000 §4.2",
    )
    undeclared = Code(
        "VS511",
        "no undeclared parameter",
        "A key under the spec's prefix that the spec does not declare was set outside GitOps.",
        "seed 000 §4.2",
    )
    also = (undeclared,)


VALUE = ParamValue.code


def check_store(spec: Spec, store: Store, timeout_s: float) -> list[Finding]:
    rec = Recorder(spec, "config-store")
    cfg = spec.config
    if cfg is None:
        return rec.findings
    prefix = (cfg.prefix or spec.metadata.name).strip("/")
    env = spec.applied_environment.id if spec.applied_environment else DEFAULT_ENV
    have = read_store(store, prefix, timeout_s)
    where = f"{store} {prefix}/"
    for p in cfg.params:
        want = value_in(p, env)
        label = f"key {p.key}"
        got = have.get(p.key)
        if want is None:
            if p.required_at_start:
                rec.drift(
                    VALUE,
                    label,
                    p,
                    f"'{p.key}' is required at start but the spec gives it no value in {env}",
                    field="values",
                    where=where,
                )
            continue
        if got is None:
            rec.drift(
                VALUE,
                label,
                p,
                f"'{p.key}' is not in the store ({env}: {text_of(want)!r})",
                field="value",
                where=where,
            )
        elif got != text_of(want):
            rec.drift(
                VALUE,
                label,
                p,
                f"'{p.key}' is {got!r} in the store, the spec gives {env} {text_of(want)!r}",
                field="value",
                where=where,
            )
        else:
            rec.ok(VALUE, label, p, f"{got!r}", field="value", where=where)
    extra = sorted(set(have) - {p.key for p in cfg.params})
    if extra:
        rec.drift(
            ParamValue.undeclared,
            "config",
            cfg,
            f"the store holds key(s) the spec does not declare under {prefix}/: {', '.join(extra)}",
            field="params",
            where=where,
        )
    else:
        rec.ok(
            ParamValue.undeclared,
            "config",
            cfg,
            f"no key beyond the declared ones under {prefix}/",
            field="params",
            where=where,
        )
    return rec.findings


@register_source
class ConfigStoreSource(Source):
    """A configuration store on loopback (Consul KV or etcd) holding the spec's `config` parameters."""

    name = "config-store"
    title = "Configuration store"
    prefix = "VS"
    options = (
        Option(
            "config_store",
            "Configuration store on loopback: consul://HOST:PORT or etcd://HOST:PORT (values of --env).",
            metavar="URL",
        ),
    )
    docs = (
        DocRow(
            "`--config-store URL`",
            "Consul KV (`/v1/kv/PREFIX/?recurse`) or etcd v3 (`/v3/kv/range`), loopback only",
            "each `config` parameter's value in the environment (`--env`, else the defaults), and no key under the "
            "prefix the spec does not declare.",
        ),
    )
    checks = (ParamValue,)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return parse_store(str(options["config_store"]))

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": self.name, "source": str(given)}, check_store(spec, given, timeout_s))
