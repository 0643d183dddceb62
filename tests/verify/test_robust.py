"""Any damage to the cluster objects gives findings (drift or unknown), never an exception."""

from __future__ import annotations

import copy
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archkit.spec import load_file
from archkit.verify import to_json, to_junit, to_text
from archkit.verify.state import ClusterState, KindRead
from tests.verify.cluster_fixtures import INDUSTRIAL_SPEC, cluster_objects
from tests.verify.inputs import run

SPEC = load_file(INDUSTRIAL_SPEC).spec
CLEAN = cluster_objects()
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70000),
    st.text(max_size=8),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.none(), max_size=2),
)


def _paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, path + (i,))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), junk=st.lists(JUNK, min_size=1, max_size=4))
def test_damaged_objects_never_crash(seed, junk):
    rng = random.Random(seed)
    objs = copy.deepcopy(CLEAN)
    for value in junk:
        obj = rng.choice(objs)
        path = rng.choice([p for p in _paths(obj) if p])
        parent = obj
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1]] = copy.deepcopy(value)
    state = ClusterState("snapshot", "damaged")
    for o in objs:
        state.add(o)
    for kind in (
        "Node",
        "Pod",
        "Service",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "NetworkPolicy",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
    ):
        state.reads[kind] = KindRead()
    report = run(SPEC, state)
    assert report.findings
    for fmt in (to_text, to_json, to_junit):
        assert fmt(report)
