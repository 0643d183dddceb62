"""Fixtures for verify tests: the clean industrial-inspection cluster, and helpers to mutate and verify it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from archkit.spec import load_file
from archkit.verify import Status
from archkit.verify.state import load_manifests, load_snapshot
from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC, as_list, cluster_objects
from tests.verify.inputs import run

_CLEAN = cluster_objects()


def find(objs: list[dict], kind: str, name: str) -> dict:
    for o in objs:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    raise KeyError(f"{kind}/{name}")


def container(objs: list[dict], name: str) -> dict:
    return find(objs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]


def pod_spec(objs: list[dict], name: str) -> dict:
    return find(objs, "Deployment", name)["spec"]["template"]["spec"]


class Cluster:
    """A mutable copy of the clean cluster that can be verified as a snapshot or as manifests."""

    def __init__(self, tmp: Path):
        self.objs = copy.deepcopy(_CLEAN)
        self.tmp = tmp
        self.spec = load_file(INDUSTRIAL_SPEC).spec

    def snapshot(self):
        path = self.tmp / "snapshot.yaml"
        path.write_text(yaml.safe_dump(as_list(self.objs), sort_keys=False), encoding="utf-8")
        return run(self.spec, load_snapshot(path))

    def manifests(self):
        folder = self.tmp / "manifests"
        folder.mkdir(exist_ok=True)
        docs = []
        for o in self.objs:
            if o["kind"] in ("Node", "Pod"):
                continue
            o = copy.deepcopy(o)
            o.pop("status", None)
            docs.append(o)
        (folder / "all.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
        return run(self.spec, load_manifests(folder))


@pytest.fixture
def cluster(tmp_path) -> Cluster:
    return Cluster(tmp_path)


def drifts(report) -> list:
    return [f for f in report.findings if f.status is Status.DRIFT]


Mutation = Callable[[list], None]


# The running reference service (Triton + gateway on free loopback ports), started exactly as
# the reference service's own tests start it; always stopped afterwards.
from tests.reference_service.conftest import redis_server, service  # noqa: E402,F401
