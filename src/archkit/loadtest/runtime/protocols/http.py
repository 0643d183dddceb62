"""Protocol `http`: each scenario is one HTTP request (geventhttpclient through locust's FastHttpUser)."""

from __future__ import annotations

from typing import Any

from locust import FastHttpUser

from archkit.loadtest.runtime.mix import Scenario
from archkit.loadtest.runtime.protocols.base import ServiceUser, register_protocol


@register_protocol("http")
class HttpServiceUser(ServiceUser, FastHttpUser):  # type: ignore[misc]  # locust is untyped
    """Sends the traffic mix to an HTTP service; an answer counts when its status is expected."""

    abstract = True

    @classmethod
    def class_attributes(cls, timeout_s: float) -> dict[str, Any]:
        # FastHttpUser reads these when it builds each user's client
        return {"connection_timeout": min(5.0, timeout_s), "network_timeout": timeout_s}

    def send(self, sc: Scenario, body: bytes) -> None:
        headers = dict(sc.headers)
        if sc.content_type:
            headers.setdefault("Content-Type", sc.content_type)
        data: Any = body or None  # geventhttpclient sends bytes as they are (locust's hint says str | dict)
        with self.client.request(
            sc.method, sc.path or "/", name=sc.id, data=data, headers=headers, catch_response=True
        ) as resp:
            if resp.status_code in sc.expect_status:
                resp.success()
            else:
                resp.failure(f"status {resp.status_code}")
