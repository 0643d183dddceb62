"""Protocols `triton-http` and `triton-grpc`: each scenario is one inference on a Triton model (tritonclient)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from archkit.loadtest.runtime.mix import Scenario, TritonTensor
from archkit.loadtest.runtime.protocols.base import ServiceUser, fire, register_protocol


def triton_input(tc: Any, spec: TritonTensor, body: bytes) -> Any:
    """The payload as one input tensor: the declared shape when the bytes fit it, else one row of a batch of one."""
    import numpy as np

    if spec.datatype == "BYTES":
        arr = np.array([body], dtype=np.object_)
    else:
        from tritonclient.utils import triton_to_np_dtype

        dtype = np.dtype(triton_to_np_dtype(spec.datatype))
        arr = np.frombuffer(body[: len(body) - len(body) % dtype.itemsize], dtype=dtype)
    shape = list(spec.shape) or [1]
    known = int(np.prod([d for d in shape if d != -1]))
    if shape.count(-1) == 0 and known == arr.size or shape.count(-1) == 1 and arr.size % known == 0:
        arr = arr.reshape(shape)
    else:  # the payload does not fit the declared shape: send it as one row of a batch of one
        arr = arr.reshape([1, -1])
    inp = tc.InferInput(spec.name, list(arr.shape), spec.datatype)
    inp.set_data_from_numpy(arr)
    return inp


def _status(exc: Exception) -> int:
    """tritonclient's status of a failed call as a number (0 when it has none)."""
    code = exc.status() if hasattr(exc, "status") and callable(exc.status) else None
    return int(code) if isinstance(code, int) or (isinstance(code, str) and code.isdigit()) else 0


class TritonUser(ServiceUser):
    """Sends the traffic mix to Triton with tritonclient (HTTP via geventhttpclient, gRPC gevent-patched)."""

    abstract = True
    grpc = False
    protocol_name = "triton-http"

    def connect(self) -> None:
        timeout = self.runtime.timeout_s
        url = urlsplit(self.host).netloc or self.host
        if self.grpc:
            # grpcio blocks the gevent loop unless told to cooperate; this must run before any channel.
            import grpc.experimental.gevent as grpc_gevent  # type: ignore[import-untyped]

            grpc_gevent.init_gevent()
            import tritonclient.grpc as tc_grpc

            self.tc: Any = tc_grpc
            self.triton = tc_grpc.InferenceServerClient(url=url)
        else:
            import tritonclient.http as tc_http

            self.tc = tc_http
            self.triton = tc_http.InferenceServerClient(
                url=url, connection_timeout=min(5.0, timeout), network_timeout=timeout
            )

    def send(self, sc: Scenario, body: bytes) -> None:
        exc: Exception | None = None
        status = 200
        start = time.perf_counter()
        try:
            inputs = [triton_input(self.tc, spec, body) for spec in sc.inputs]
            outputs = [self.tc.InferRequestedOutput(name) for name in sc.outputs] or None
            if self.grpc:
                self.triton.infer(sc.model, inputs, outputs=outputs, client_timeout=self.runtime.timeout_s)
            else:
                self.triton.infer(sc.model, inputs, outputs=outputs)
        except Exception as e:  # every failure is a failed request, not a crashed user
            exc, status = e, _status(e)
        fire(self, self.protocol_name, sc.id, (time.perf_counter() - start) * 1000.0, len(body), status, exc)


@register_protocol("triton-http")
class TritonHttpUser(TritonUser):
    """Triton over HTTP/REST (KServe v2)."""

    abstract = True


@register_protocol("triton-grpc")
class TritonGrpcUser(TritonUser):
    """Triton over gRPC."""

    abstract = True
    grpc = True
    protocol_name = "triton-grpc"
