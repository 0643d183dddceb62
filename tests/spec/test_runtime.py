"""Runtime versions (seed 000 §4.1), the model output contract (seed 004 §1), the NVIDIA env helper."""

from __future__ import annotations

import pytest

from archkit.spec import load_text
from archkit.spec.gpu_env import capabilities, container_env, nvidia_env
from archkit.spec.model_contract import major
from archkit.spec.runtime import framework_cuda, image_cuda

HEAD = "apiVersion: archkit/v1\nmetadata: {name: t}\n"


@pytest.mark.parametrize(
    "image,cuda",
    [
        ("nvcr.io/nvidia/pytorch:23.10-py3", "12.2.2"),  # seed 000 §4.1's base: not the 11.8 it claims
        ("nvcr.io/nvidia/tritonserver:22.11-py3@sha256:" + "a" * 64, "11.8.0"),
        ("nvcr.io/nvidia/pytorch:19.03-py3", None),  # a release the table does not list
        ("nvidia/cuda:12.1.1-cudnn8-runtime-ubuntu22.04", "12.1.1"),
        ("docker.io/pytorch/pytorch:2.0.1-cuda11.7-cudnn8-runtime", "11.7"),
        ("registry.example:5000/ocr:1.2.3", None),
        ("ghcr.io/acme/cudatools:1.0.0", None),  # 'cuda' in the name, not in the tag
    ],
)
def test_image_cuda(image, cuda):
    got = image_cuda(image)
    assert (got[0] if got else None) == cuda


def test_framework_cuda_and_major():
    assert framework_cuda("torch==2.0.1+cu118") == "11.8"
    assert framework_cuda("torch==1.8.0+cu102") == "10.2"
    assert framework_cuda("torch==2.1.0") is None
    assert [major(v) for v in ("1.2.0", "v2.0", "20231025", "v3", None)] == [1, 2, None, None, None]


def test_runtime_version_must_be_dotted():
    res = load_text(
        HEAD
        + "topology:\n  node_pools: [{id: p}]\n  services: [{id: a, pool: p, runtime: {cuda: 'eleven'}}]\n",
        "r.yaml",
    )
    assert not res.ok
    assert [(d.line, d.path) for d in res.diagnostics] == [(5, "topology.services[0].runtime.cuda")]


def test_nvidia_env_defaults_only_on_gpu_services():
    res = load_text(
        HEAD + "topology:\n  node_pools: [{id: p, gpu: {model: A100, mig_profile: 1g.10gb, sharing: mig}}]\n"
        "  services:\n"
        "    - {id: g, pool: p, resources: {limits: {gpu: 1}}, env: {A: b}}\n"
        "    - {id: c, pool: p, env: {NVIDIA_DRIVER_CAPABILITIES: 'compute, Utility'}}\n",
        "e.yaml",
    )
    assert res.ok, [d.text() for d in res.diagnostics]
    spec = res.spec
    g, c = spec.service("g"), spec.service("c")
    pool = spec.pool("p")
    assert container_env(g, pool) == {
        "A": "b",
        "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
        "NVIDIA_MIG_CONFIG_DEVICES": "all",
    }
    assert nvidia_env(c, pool) == {"NVIDIA_DRIVER_CAPABILITIES": "compute, Utility"}
    assert capabilities("compute, Utility") == ["compute", "utility"]
