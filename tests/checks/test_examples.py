"""`archkit check` on every example gives exactly its documented findings (examples/README.md),
and the seeds' pitfalls come back when the example specs' guarding settings are removed.

Goldens: tests/checks/examples/<name>.txt is the text output of `archkit check`
(update with `.venv/bin/pytest tests/checks/test_examples.py --update-golden`).
Mutations edit the loaded YAML data in memory; no extra example files.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import yaml
from typer.testing import CliRunner

from archkit.api import check_spec
from archkit.cli import _load_commands, app
from archkit.spec import load_text
from tests.conftest import EXAMPLES, ROOT

GOLDEN = ROOT / "tests" / "checks" / "examples"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_check_output_matches_golden(example, golden, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    _load_commands()
    res = CliRunner().invoke(app, ["check", f"examples/{example.name}"])
    assert res.exit_code in (0, 1), res.output
    golden.check(GOLDEN / f"{example.stem}.txt", res.output)
    # the README documents each example's findings: every code in the golden is explained there
    readme = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"`{example.name}`", 1)[1].split("\n## ", 1)[0]
    for line in res.output.splitlines()[:-1]:
        code = line.split(": ", 1)[1].split(" ", 1)[0]
        assert code in section, f"{code} of {example.name} is not documented in examples/README.md"


def _data(name: str) -> dict:
    return yaml.safe_load((ROOT / "examples" / f"{name}.yaml").read_text(encoding="utf-8"))


def _codes(data: dict) -> Counter:
    res = load_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "mutated.yaml")
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return Counter(d.code for d in check_spec(res.spec))


def _find(items: list, key: str, value: str) -> dict:
    return next(i for i in items if i.get(key) == value)


def test_industrial_batch8_is_flagged_and_the_recommended_configuration_passes():
    data = _data("industrial-inspection")
    base = _codes(data)
    assert base["AK203"] == 1
    res = load_text((ROOT / "examples" / "industrial-inspection.yaml").read_text(encoding="utf-8"), "x.yaml")
    ak203 = next(d for d in check_spec(res.spec) if d.code == "AK203")
    # seed 000 §2.1's 50 ms is the detector's (65 ms end to end less the other stages' 15 ms)
    assert "at batch 8" in ak203.message and "> 50 ms (stage 'detect' p99_ms)" in ak203.message
    assert "batch 1, max_queue_delay_us 0, 6 replica(s)" in ak203.hint
    # one shared queue (least-request routing): batch 1, no delay, 6 replicas, the seed's Triton
    fixed = copy.deepcopy(data)
    det = _find(fixed["dataflow"]["stages"], "id", "detect")
    det["model"]["batching"].update(preferred_batch_sizes=[1], max_queue_delay_us=0)
    triton = _find(fixed["topology"]["services"], "id", "triton")
    triton.update(replicas=6)
    _find(fixed["topology"]["node_pools"], "id", "gpu-node-t4")["count"] = 6
    assert _codes(fixed)["AK203"] == 0


RECOMMENDATION = {
    # seed 000 §3.2: the feature-service call's 800 ms timeout and its degraded path
    "drop the feature-service timeout": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-features").pop("timeout_ms"),
        "AK401",
    ),
    "drop the feature-service fallback": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-features").pop("on_failure"),
        "AK403",
    ),
    "retry the ranker 5 times": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-rank")["retry"].update(attempts=5),
        "AK402",
    ),
    # seed 004 §2.3: GPU requests must equal limits
    "GPU request 0.5": (
        lambda d: _find(d["topology"]["services"], "id", "ranker")["resources"]["requests"].update(gpu=0.5),
        "AK301",
    ),
    # seed 000 §3.3: NFS soft,timeo,retrans and the liveness probe that times out on the mount
    "hard NFS mount": (
        lambda d: _find(d["topology"]["storage"], "id", "model-repo").update(mount_options=["hard"]),
        "AK305",
    ),
    "HTTP liveness on the ranker": (
        lambda d: _find(d["topology"]["services"], "id", "ranker")["probes"].update(
            liveness={"http_path": "/healthz", "port": 8000}
        ),
        "AK306",
    ),
    # seed 000 §5.5, §2.2, §5.12
    "RDMA MTU 1500": (lambda d: _find(d["topology"]["networks"], "id", "rdma").update(mtu=1500), "AK308"),
    "one model version": (
        lambda d: _find(d["dataflow"]["stages"], "id", "rank")["model"]["version_policy"].update(
            latest_num_versions=1
        ),
        "AK312",
    ),
    "no rollback golden set": (
        lambda d: _find(d["dataflow"]["stages"], "id", "rank")["model"]["rollback"].pop("golden_set"),
        "AK313",
    ),
    # seed 000 §5.6: nofile 1024 on the gateway at 2000 QPS peak
    "gateway without nofile": (
        lambda d: _find(d["topology"]["services"], "id", "gateway").pop("ulimits"),
        "AK309",
    ),
}

LOAN = {
    # seed 004 §2.1: the external public-security registry call
    "no breaker on the registry call": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-registry").pop("circuit_breaker"),
        "AK406",
    ),
    "no timeout on the registry call": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-registry").pop("timeout_ms"),
        "AK401",
    ),
    "no failure path from the registry call": (
        lambda d: _find(d["controlflow"]["calls"], "id", "call-registry").pop("on_failure"),
        "AK403",
    ),
    # seed 000 §2.4: biometric ID photos encrypted, tagged, never leaving the domain
    "unencrypted biometric intake": (
        lambda d: _find(d["dataflow"]["stages"], "id", "frontend-check").pop("encryption"),
        "AK501",
    ),
    "biometric egress": (
        lambda d: _find(d["dataflow"]["stages"], "id", "frontend-check").update(egress=True),
        "AK502",
    ),
    "no compliance tag": (
        lambda d: _find(d["dataflow"]["stages"], "id", "frontend-check").pop("compliance"),
        "AK503",
    ),
    # seed 004 §4.2, §4.3
    "base64 images in the OCR log": (
        lambda d: _find(d["dataflow"]["stages"], "id", "ocr").update(logs_payload=True),
        "AK506",
    ),
    "yearly key rotation": (lambda d: d["policies"]["security"].update(kms_key_rotation_days=365), "AK507"),
    # seed 000 §2.4: JWT on the public entry
    "anonymous public intake": (
        lambda d: _find(d["topology"]["services"], "id", "intake")["ingress"][0].update(auth="none"),
        "AK505",
    ),
    # seed 004 §2.3
    "OCR GPU request 0.5": (
        lambda d: _find(d["topology"]["services"], "id", "ocr")["resources"]["requests"].update(gpu=0.5),
        "AK301",
    ),
    "OCR on the CPU pool": (
        lambda d: _find(d["topology"]["services"], "id", "ocr").update(pool="cpu-post"),
        "AK302",
    ),
}


@pytest.mark.parametrize(
    "example,mutation",
    [("recommendation", m) for m in RECOMMENDATION] + [("loan-preapproval", m) for m in LOAN],
)
def test_removing_a_guard_brings_back_the_seed_pitfall(example, mutation):
    data = _data(example)
    before = _codes(data)
    edit, code = (RECOMMENDATION if example == "recommendation" else LOAN)[mutation]
    mutated = copy.deepcopy(data)
    edit(mutated)
    after = _codes(mutated)
    assert after[code] > before[code], f"{mutation}: expected a new {code}; got {dict(after - before)}"
