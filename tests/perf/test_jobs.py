"""Batch GPU jobs' GPU time against the online stages on the same GPUs (`archkit.perf.jobs`, seed 004 §4.4).

Hand-computed: one online model of 50 ms of GPU per request (batch 1) on 4 GPUs at 40 req/s
needs 40 × 0.05 = 2 GPU-seconds a second, 50 % of 4 GPUs; a job of 3 tasks at duty 0.8 takes
2.4 GPUs, leaving 1.6: 2 / 1.6 = 125 %, and the online ceiling while it runs is 1.6 / 0.05 = 32 req/s.
"""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from archkit.cli import _load_commands, app
from archkit.perf.jobs import job_loads
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata: {{name: t}}
budgets: {{p99_ms: 5000, throughput_rps: 40}}
dataflow:
  stages:
    - id: ocr
      kind: model
      service: triton
      model:
        name: ocr
        batching: {{max_batch_size: 1, max_queue_size: 64}}
        service_time: [{{batch_size: 1, compute_ms: 50}}]
topology:
  node_pools: [{{id: gpu, count: 4, gpu: {{model: A10, memory_gb: 24{sharing}}}}}, {{id: gpu2, count: 1, gpu: {{model: A10, memory_gb: 24}}}}]
  services:
    - {{id: triton, pool: gpu, replicas: 4, resources: {{limits: {{gpu: 1}}}}}}
    - {{id: batch, pool: {batch_pool}, replicas: 1, resources: {{limits: {{gpu: 1}}}}}}
jobs:
  - {{id: reprocess, service: {service}, {job}}}
"""


def _spec(job: str, service: str = "triton", sharing: str = "", batch_pool: str = "gpu2"):
    res = load_text(SPEC.format(job=job, service=service, sharing=sharing, batch_pool=batch_pool))
    assert res.spec is not None, [d.text() for d in res.diagnostics]
    return res.spec


def test_cap_and_duty_take_gpus_from_the_online_stages():
    (jl,) = job_loads(_spec("max_concurrency: 3, gpu_duty_cycle: 0.8, gpu_ms_per_task: 200"))
    assert (jl.resource, jl.units, jl.stages) == ("triton:gpu", 4.0, ("ocr",))
    assert jl.online_demand_s == pytest.approx(0.05)
    assert jl.taken == pytest.approx(2.4)
    assert jl.utilisation(40, with_job=False) == pytest.approx(0.5)
    assert jl.utilisation(40) == pytest.approx(1.25)
    assert jl.ceiling_rps() == pytest.approx(32.0)
    # 3 slots × 0.8 × 3,600,000 ms / 200 ms of GPU per task
    assert jl.tasks_per_hour == pytest.approx(43_200)


def test_a_cap_above_the_services_gpus_takes_only_those():
    (jl,) = job_loads(_spec("max_concurrency: 100, gpu_duty_cycle: 0.5"))
    assert jl.taken == pytest.approx(2.0)  # 4 GPUs, one task each, half busy
    assert jl.utilisation(40) == pytest.approx(1.0)


def test_uncapped_at_full_duty_leaves_nothing():
    (jl,) = job_loads(_spec("gpu_ms_per_task: 200"))
    assert jl.taken == pytest.approx(4.0)
    assert math.isinf(jl.utilisation(40))
    assert jl.ceiling_rps() == 0.0
    assert jl.tasks_per_hour is None  # no cap: no rate at the cap


def test_a_job_on_its_own_gpus_takes_nothing_from_the_online_stages():
    (jl,) = job_loads(_spec("max_concurrency: 3", service="batch"))
    assert (jl.resource, jl.stages, jl.online_demand_s) == ("batch:gpu", (), 0.0)
    assert jl.utilisation(40) == 0.0


def test_a_time_sliced_pool_is_shared_by_a_job_on_another_service():
    """On a time-sliced pool every service shares the pool's GPUs (`perf.resources`): a job on the
    batch service (1 GPU) takes 1 × 0.8 of the pool's 4 from the online OCR."""
    spec = _spec("max_concurrency: 3, gpu_duty_cycle: 0.8", "batch", ", sharing: time_slicing", "gpu")
    (jl,) = job_loads(spec)
    assert jl.resource == "pool gpu:gpu (time_slicing)"
    assert jl.taken == pytest.approx(0.8)
    assert jl.utilisation(40) == pytest.approx(2 / 3.2)


def test_capacity_prints_and_reports_the_job(tmp_path):
    _load_commands()
    path = tmp_path / "s.yaml"
    job = "max_concurrency: 3, gpu_duty_cycle: 0.8, gpu_ms_per_task: 200"
    path.write_text(SPEC.format(job=job, service="triton", sharing="", batch_pool="gpu2"))
    runner = CliRunner()
    out = runner.invoke(app, ["capacity", str(path)]).output
    assert (
        "job reprocess (cap 3 × duty 0.8, 43200 tasks/h at its cap): takes 2.4 of 4 GPU(s) of "
        "'triton:gpu': online ocr 50 % → 125 % at 40 req/s, online ceiling 32 req/s while it runs"
    ) in out
    doc = json.loads(runner.invoke(app, ["capacity", str(path), "-f", "json"]).output)
    (row,) = doc["jobs"]
    assert (row["gpus_taken"], row["online_utilisation"], row["online_utilisation_with_job"]) == (
        2.4,
        0.5,
        1.25,
    )
