"""Result cache keyed by the image's SHA-256: in-process LRU, or Redis when given a URL.

Seed 004 §3.3: cache deterministic intermediates. OCR of identical bytes by the same model
versions is deterministic, so the whole result is cached.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

LOG = logging.getLogger("reference_service.cache")


class LruCache:
    """Bounded in-process LRU of serialised results."""

    kind = "lru"

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._data: OrderedDict[str, bytes] = OrderedDict()

    async def get(self, key: str) -> bytes | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    async def set(self, key: str, value: bytes) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.entries:
            self._data.popitem(last=False)

    async def close(self) -> None:
        self._data.clear()


class RedisCache:
    """Redis-backed cache with a TTL; a Redis failure is a cache miss, never a failed request."""

    kind = "redis"

    def __init__(self, url: str, ttl_s: int) -> None:
        import redis.asyncio as redis

        self.ttl_s = ttl_s
        self._client = redis.Redis.from_url(url, socket_timeout=0.2, socket_connect_timeout=0.2)

    async def get(self, key: str) -> bytes | None:
        try:
            return await self._client.get(f"ocr:{key}")
        except Exception as exc:  # noqa: BLE001 - any Redis trouble degrades to a miss
            LOG.warning("redis get failed: %s", type(exc).__name__)
            return None

    async def set(self, key: str, value: bytes) -> None:
        try:
            await self._client.set(f"ocr:{key}", value, ex=self.ttl_s)
        except Exception as exc:  # noqa: BLE001
            LOG.warning("redis set failed: %s", type(exc).__name__)

    async def close(self) -> None:
        await self._client.aclose()


def make_cache(redis_url: str | None, entries: int, ttl_s: int):
    """The configured cache: Redis when ``redis_url`` is set, else an in-process LRU."""
    return RedisCache(redis_url, ttl_s) if redis_url else LruCache(entries)
