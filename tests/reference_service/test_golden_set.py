"""The golden set and the pure helpers of the reference service (no server needed)."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest
from PIL import Image

from reference_service.accuracy import char_accuracy, corpus_accuracy, levenshtein, load_manifest, truth_text
from reference_service.cache import LruCache

from .conftest import GOLDEN


def test_golden_set_has_at_least_50_documents_with_truth_and_expected_outputs():
    docs = load_manifest()["documents"]
    assert len(docs) >= 50
    fonts = {d["font"] for d in docs.values()}
    assert len(fonts) >= 6
    by_precision = json.loads((GOLDEN / "expected_outputs.json").read_text())["outputs"]
    assert {"bf16", "int8", "f32"} <= set(by_precision)  # OpenVINO's three CPU precisions
    for name, doc in docs.items():
        path = GOLDEN / name
        assert path.exists() and path.stat().st_size < 200_000, name
        assert doc["lines"] and all(line["text"].strip() for line in doc["lines"])
        assert all(name in expected for expected in by_precision.values())
        with Image.open(path) as img:
            assert 600 <= img.width <= 1000


@pytest.mark.parametrize("index", [0, 17, 59])
def test_generator_is_deterministic(index):
    from reference_service.golden.generate import render

    seed = load_manifest()["seed"]
    img, meta = render(index, seed)
    name = f"images/doc_{index:03d}.png"
    assert meta == load_manifest()["documents"][name]
    with Image.open(GOLDEN / name) as committed:
        assert np.array_equal(np.asarray(img), np.asarray(committed))


@pytest.mark.parametrize("precision", ["bf16", "int8", "f32"])
def test_recorded_outputs_meet_the_accuracy_target(precision):
    recorded = json.loads((GOLDEN / "expected_outputs.json").read_text())
    expected = recorded["outputs"][precision]
    if precision == "int8":  # int8 serves quantised files: recorded with their identity
        from reference_service.quantise import INT8_SHA256

        assert {f["file"]: f["sha256"] for f in recorded["files"]["int8"]} == INT8_SHA256
    assert corpus_accuracy({n: o["text"] for n, o in expected.items()}) >= 0.97


def test_accuracy_helpers():
    assert levenshtein("kitten", "sitting") == 3
    assert char_accuracy("a  b\nc", "a b c") == 1.0
    assert char_accuracy("", "abc") == 0.0
    doc = {"lines": [{"text": "x"}, {"text": "y"}]}
    assert truth_text(doc) == "x\ny"


def test_lru_cache_evicts_least_recently_used():
    async def scenario():
        c = LruCache(2)
        await c.set("a", b"1")
        await c.set("b", b"2")
        assert await c.get("a") == b"1"  # a is now the most recent
        await c.set("c", b"3")
        return await c.get("a"), await c.get("b"), await c.get("c")

    assert asyncio.run(scenario()) == (b"1", None, b"3")


def test_drift_monitor_flags_a_shifted_confidence_distribution():
    import random

    from reference_service.drift import DriftMonitor, ks_p_value, reference_confidences

    ref = reference_confidences()
    assert len(ref) >= 50 and min(ref) > 0.5
    # Samples of the reference itself: a 5 % test rejects about one in twenty of them (the
    # pool holds every precision's pages, so one seed's sample can be that one).
    rngs = [random.Random(seed) for seed in range(20)]
    samples = [[rng.choice(ref) for _ in range(100)] for rng in rngs]
    assert sum(ks_p_value(s, ref) > 0.05 for s in samples) >= 16
    same = samples[6]
    shifted = [x - 0.15 for x in same]
    assert ks_p_value(shifted, ref) < 0.01
    monitor = DriftMonitor(ref, min_samples=30, every=10)
    for x in shifted[:40]:
        p = monitor.observe(x)
    assert p < 0.01


def test_hard_set_is_smaller_rotated_low_contrast_jpeg_and_deterministic():
    from reference_service.golden.generate import HARD_DIR, render_hard

    manifest = load_manifest(HARD_DIR)
    docs = manifest["documents"]
    assert len(docs) >= 20
    assert all(
        20 <= d["font_px"] <= 26 and d["rotation_deg"] != 0 and d["contrast"] <= 120 for d in docs.values()
    )
    name = sorted(docs)[5]
    data, meta = render_hard(5, manifest["seed"])
    assert meta == docs[name]
    assert data == (HARD_DIR / name).read_bytes()
    with Image.open(HARD_DIR / name) as img:
        assert img.format == "JPEG"
