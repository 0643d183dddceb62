"""The configuration-store export (seed 000 §4.2): `consul kv import` JSON and env files per environment.

No Consul binary installs here (neither PyPI nor Debian carry one), so the JSON is checked against
the entry Consul's `kv import` reads, as its source defines it (hashicorp/consul
command/kv/impexp/kvimpexp.go: `Entry{Key string "key"; Flags uint64 "flags"; Value string "value"}`,
the value `base64.StdEncoding`), and the env files are read back by a real POSIX shell.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

from archkit.spec.config import Config, ConfigParam
from archkit.spec.model import Environment
from tests.conftest import EXAMPLES
from tests.deploy.helpers import load_spec, render_one

LOAN = next(p for p in EXAMPLES if p.stem == "loan-preapproval")
ENTRY_FIELDS = {"key": str, "flags": int, "value": str}  # kvimpexp.go's Entry (namespace/partition omitempty)


def _kv(path: Path) -> dict[str, tuple[int, str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, list)
    out = {}
    for entry in data:
        assert set(entry) == set(ENTRY_FIELDS)
        assert all(isinstance(entry[k], t) for k, t in ENTRY_FIELDS.items())
        assert 0 <= entry["flags"] < 2**64
        out[entry["key"]] = (entry["flags"], base64.b64decode(entry["value"], validate=True).decode("utf-8"))
    return out


def _env(path: Path) -> dict[str, str]:
    script = f"set -a; . {path}; env -0"
    out = subprocess.run(["sh", "-c", script], capture_output=True, check=True, env={}).stdout.decode()
    got = dict(item.split("=", 1) for item in out.split("\0") if "=" in item)
    got.pop("PWD", None)  # the shell's own
    return got


def test_example_export(tmp_path: Path) -> None:
    spec = load_spec(LOAN)
    folder = render_one(spec, "config", tmp_path)
    kv = _kv(folder / "default" / "consul-kv.json")
    assert kv["loan-preapproval/risk/borderline_low"] == (1, "0.45")
    assert kv["loan-preapproval/review/kafka_group_id"] == (0, "loan-review")
    env = _env(folder / "default" / "app.env")
    assert env["RISK_BORDERLINE_LOW"] == "0.45" and env["OCR_FAST_QUALITY_MIN"] == "0.7"


def test_per_environment_values_and_required_keys(tmp_path: Path) -> None:
    spec = load_spec(LOAN)
    spec.environments = [Environment(id="prod")]
    spec.config = Config(
        prefix="loans/v1",
        params=[
            ConfigParam(key="gateway/pool_size", value=8, values={"prod": 32}),
            ConfigParam(key="feature/strict", values={"prod": True}),
            ConfigParam(key="db/url", required_at_start=True, values={"prod": "postgres://db:5432/x y"}),
        ],
    )
    folder = render_one(spec, "config", tmp_path)
    assert _kv(folder / "default" / "consul-kv.json") == {"loans/v1/gateway/pool_size": (0, "8")}
    assert _kv(folder / "prod" / "consul-kv.json") == {
        "loans/v1/db/url": (1, "postgres://db:5432/x y"),
        "loans/v1/feature/strict": (0, "true"),
        "loans/v1/gateway/pool_size": (0, "32"),
    }
    assert _env(folder / "prod" / "app.env") == {
        "DB_URL": "postgres://db:5432/x y",
        "FEATURE_STRICT": "true",
        "GATEWAY_POOL_SIZE": "32",
    }
    assert "# NOT SET in default, required at start: db/url" in (folder / "default" / "app.env").read_text()


def test_hostile_values_stay_one_value(tmp_path: Path) -> None:
    spec = load_spec(LOAN)
    spec.config = Config(params=[ConfigParam(key="x", value="a'b; echo $HOME `id` \\")])
    folder = render_one(spec, "config", tmp_path)
    assert _env(folder / "default" / "app.env") == {"X": "a'b; echo $HOME `id` \\"}
