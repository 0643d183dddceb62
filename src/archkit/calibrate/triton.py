"""A small KServe-v2 HTTP client for calibration: binary-tensor inference and Triton's statistics.

Plain `http.client` (one keep-alive connection per thread), so the sweep needs neither gevent nor
tritonclient in this process. Inference uses the binary tensor extension (JSON header, raw bytes);
statistics come from `/v2/models/NAME/versions/V/stats`, which PyTriton guards with an access token
(header `triton-access-token`). Loopback only (archkit.loadtest.safety).
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from archkit import engines
from archkit.endpoints import parse_endpoint
from archkit.errors import ArchkitError
from archkit.loadtest.safety import require_loopback

DTYPES = {
    "TYPE_BOOL": ("BOOL", np.bool_),
    "TYPE_UINT8": ("UINT8", np.uint8),
    "TYPE_UINT16": ("UINT16", np.uint16),
    "TYPE_UINT32": ("UINT32", np.uint32),
    "TYPE_UINT64": ("UINT64", np.uint64),
    "TYPE_INT8": ("INT8", np.int8),
    "TYPE_INT16": ("INT16", np.int16),
    "TYPE_INT32": ("INT32", np.int32),
    "TYPE_INT64": ("INT64", np.int64),
    "TYPE_FP16": ("FP16", np.float16),
    "TYPE_FP32": ("FP32", np.float32),
    "TYPE_FP64": ("FP64", np.float64),
}
ENDPOINTS = engines.adapter("triton").endpoints
STAT_PARTS = ("queue", "compute_input", "compute_infer", "compute_output", "success")


class TritonError(ArchkitError, RuntimeError):
    """Triton answered with an error, or could not be reached."""


def _path(template: str | None, model: str) -> str:
    """An endpoint of the Triton adapter for one model."""
    assert template is not None, "the Triton adapter declares this endpoint"
    return template.format(model=model)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    datatype: str  # KServe name, e.g. UINT8
    dtype: Any  # numpy dtype
    dims: tuple[int, ...]  # without the batch dimension; -1 = variable


@dataclass(frozen=True)
class ModelConfig:
    name: str
    max_batch_size: int
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[str, ...]
    instances: int


class Client:
    """One keep-alive connection to Triton's HTTP endpoint (use one per thread)."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = 60.0) -> None:
        require_loopback(url, "Triton")
        parts = urlsplit(url if "://" in url else "http://" + url)
        # the judged address (`127.1`, `0x7f000001` normalised), never the spelling, is connected to
        self.host, self.port = parse_endpoint(url).host, parts.port or 8000
        self.token = token
        self.timeout_s = timeout_s
        self.conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _request(
        self, method: str, path: str, body: bytes | None = None, headers: dict | None = None
    ) -> bytes:
        hdrs = dict(headers or {})
        if self.token:
            hdrs["triton-access-token"] = self.token  # never logged: not part of any message below
        for attempt in (0, 1):  # one reconnect: the server may have closed an idle keep-alive
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            try:
                self.conn.request(method, path, body=body, headers=hdrs)
                resp = self.conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt:
                    raise TritonError(f"Triton at {self.host}:{self.port} {path}: {exc}") from None
                continue
            if resp.status != 200:
                text = data[:300].decode("utf-8", "replace")
                raise TritonError(f"Triton {method} {path}: HTTP {resp.status} {text}")
            return data
        raise TritonError(f"Triton at {self.host}:{self.port} {path}: no answer")

    def config(self, model: str) -> ModelConfig:
        cfg = json.loads(self._request("GET", _path(ENDPOINTS.model_config, model)))
        inputs = []
        for i in cfg.get("input", []):
            kind = i.get("data_type", "")
            if kind not in DTYPES:
                raise TritonError(
                    f"model {model} input {i.get('name')}: datatype {kind} is not supported here"
                )
            name, dtype = DTYPES[kind]
            inputs.append(TensorInfo(i["name"], name, dtype, tuple(int(d) for d in i.get("dims", []))))
        instances = sum(int(g.get("count", 1)) for g in cfg.get("instance_group", [])) or 1
        return ModelConfig(
            model,
            int(cfg.get("max_batch_size", 0)),
            tuple(inputs),
            tuple(o["name"] for o in cfg.get("output", [])),
            instances,
        )

    def infer(
        self,
        model: str,
        arrays: dict[str, np.ndarray],
        infos: tuple[TensorInfo, ...],
        outputs: tuple[str, ...],
    ) -> None:
        """One inference with binary tensors in and out (the outputs are read and dropped)."""
        blobs = []
        header: dict = {
            "inputs": [],
            "outputs": [{"name": o, "parameters": {"binary_data": True}} for o in outputs],
        }
        for info in infos:
            arr = np.ascontiguousarray(arrays[info.name], dtype=info.dtype)
            raw = arr.tobytes()
            blobs.append(raw)
            header["inputs"].append(
                {
                    "name": info.name,
                    "shape": list(arr.shape),
                    "datatype": info.datatype,
                    "parameters": {"binary_data_size": len(raw)},
                }
            )
        head = json.dumps(header).encode()
        self._request(
            "POST",
            _path(ENDPOINTS.infer, model),
            body=head + b"".join(blobs),
            headers={
                "Inference-Header-Content-Length": str(len(head)),
                "Content-Type": "application/octet-stream",
            },
        )

    def stats(self, model: str) -> dict[str, tuple[int, int]]:
        """Cumulative (count, ns) per part (queue, compute_input, compute_infer, compute_output, success)."""
        data = json.loads(self._request("GET", _path(ENDPOINTS.model_stats, model)))
        total: dict[str, tuple[int, int]] = {k: (0, 0) for k in STAT_PARTS}
        for ms in data.get("model_stats", []):
            inf = ms.get("inference_stats", {})
            for k in STAT_PARTS:
                c, n = total[k]
                part = inf.get(k, {})
                total[k] = (c + int(part.get("count", 0)), n + int(part.get("ns", 0)))
        return total


def delta(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    return {k: (after[k][0] - before[k][0], after[k][1] - before[k][1]) for k in STAT_PARTS}
