"""Bad input against the live service: clear 4xx, no leaks, no poisoned batches, bounded memory."""

from __future__ import annotations

import io
import random
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from .conftest import png_stream, rss_mb

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _gif() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (64, 64), 255).save(buf, format="GIF")
    return buf.getvalue()


def _cases(golden: bytes) -> dict[str, tuple[bytes, str, int, str]]:
    """name: (body, content type, expected status, expected error code)."""
    rng = random.Random(6)
    return {
        "garbage": (bytes(rng.getrandbits(8) for _ in range(4096)), "image/png", 400, "not_an_image"),
        "empty": (b"", "image/png", 400, "empty_body"),
        "truncated_png": (golden[: len(golden) // 2], "image/png", 400, "corrupt_image"),
        "decompression_bomb": (png_stream(40_000, 40_000, bit_depth=1), "image/png", 413, "image_too_large"),
        "10000x10000": (png_stream(10_000, 10_000), "image/png", 413, "image_too_large"),
        "wrong_content_type": (golden, "text/plain", 415, "unsupported_media_type"),
        "json_content_type": (b'{"image": "x"}', "application/json", 415, "unsupported_media_type"),
        "gif": (_gif(), "image/png", 415, "unsupported_format"),
        "tiny": (png_stream(4, 4), "image/png", 422, "image_too_small"),
        "50MB": (b"\x89PNG" + b"\x00" * (50 * 1024 * 1024), "image/png", 413, "body_too_large"),
    }


CASE_NAMES = [
    "garbage",
    "empty",
    "truncated_png",
    "decompression_bomb",
    "10000x10000",
    "wrong_content_type",
    "json_content_type",
    "gif",
    "tiny",
    "50MB",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_bad_input_gets_a_clear_4xx(service, golden_pngs, name):
    body, ctype, status, code = _cases(golden_pngs["images/doc_000.png"])[name]
    r = httpx.post(f"{service.url}/v1/ocr", content=body, headers={"Content-Type": ctype}, timeout=30)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code
    message = err["message"]
    assert len(message) < 160
    for leak in ("Traceback", 'File "', "/work", "/tmp", "/root", ".py", "site-packages"):
        assert leak not in r.text
    assert httpx.get(f"{service.url}/readyz", timeout=5).status_code == 200


def test_bad_inputs_do_not_poison_good_ones_and_memory_stays_bounded(service, golden_pngs):
    """Bad and good requests interleaved: every good one still gets its text; RSS stays bounded."""
    from reference_service.accuracy import char_accuracy, load_manifest, truth_text

    docs = load_manifest()["documents"]
    good = ["images/doc_001.png", "images/doc_002.png", "images/doc_005.png"]
    cases = _cases(golden_pngs["images/doc_000.png"])
    bad = [cases[n] for n in ("garbage", "truncated_png", "decompression_bomb", "10000x10000")]

    def post_good(name):
        r = httpx.post(
            f"{service.url}/v1/ocr",
            content=golden_pngs[name],
            headers={"Content-Type": "image/png", "Cache-Control": "no-cache"},
            timeout=60,
        )
        return name, r

    # The baseline is a service that has served: the first pages through Triton's model instances
    # grow them by ~200 MiB whatever the inputs (this file run alone: 972 -> 1191-1212 MiB on main
    # and on the shared-gateway branch alike; in the whole live run, where earlier files have sent
    # pages first, it stays within the bound).
    for name in good:
        assert post_good(name)[1].status_code == 200
    before = rss_mb(service.pid)

    def post_bad(case):
        body, ctype, status, _ = case
        return httpx.post(
            f"{service.url}/v1/ocr", content=body, headers={"Content-Type": ctype}, timeout=60
        ), status

    # Max in-flight is 4: keep good + bad concurrency at 4 so nothing is refused with 429.
    with ThreadPoolExecutor(4) as pool:
        goods = [pool.submit(post_good, n) for n in good]
        bads = [pool.submit(post_bad, c) for c in bad * 2]
        for f in bads:
            r, status = f.result()
            assert r.status_code in (status, 429), r.text
        for f in goods:
            name, r = f.result()
            assert r.status_code == 200, r.text
            assert char_accuracy(r.json()["text"], truth_text(docs[name])) >= 0.95
    after = rss_mb(service.pid)
    # A decoded 10000x10000 RGB page alone would be ~300 MB; caps before decoding keep it flat.
    assert after - before < 150, f"RSS grew from {before:.0f} to {after:.0f} MiB"
    assert httpx.get(f"{service.url}/readyz", timeout=5).status_code == 200
