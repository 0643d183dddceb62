"""Result cache against a real redis-server: hits, keys, and degrading to misses when Redis dies."""

from __future__ import annotations

import httpx
import pytest

from .conftest import unique_png

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_second_request_is_a_cache_hit_stored_in_redis(service, golden_pngs, redis_server):
    if redis_server is None:
        pytest.skip("redis-server is not installed")
    import redis

    body = unique_png(golden_pngs["images/doc_010.png"], 1)
    first = httpx.post(
        f"{service.url}/v1/ocr", content=body, headers={"Content-Type": "image/png"}, timeout=60
    )
    second = httpx.post(
        f"{service.url}/v1/ocr", content=body, headers={"Content-Type": "image/png"}, timeout=60
    )
    assert first.status_code == second.status_code == 200
    assert first.headers["X-Cache"] == "miss" and second.headers["X-Cache"] == "hit"
    assert first.json() == second.json()
    client = redis.Redis(host="127.0.0.1", port=redis_server["port"])
    assert any(first.json()["sha256"] in k.decode() for k in client.scan_iter("ocr:*"))
    metrics = httpx.get(f"{service.url}/metrics", timeout=5).text
    assert 'ocr_cache_lookups_total{result="hit"}' in metrics


def test_redis_down_degrades_to_cache_miss(service, golden_pngs, redis_server):
    if redis_server is None:
        pytest.skip("redis-server is not installed")
    redis_server["proc"].terminate()
    redis_server["proc"].wait(timeout=10)
    body = unique_png(golden_pngs["images/doc_011.png"], 2)
    r = httpx.post(f"{service.url}/v1/ocr", content=body, headers={"Content-Type": "image/png"}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.headers["X-Cache"] == "miss"
