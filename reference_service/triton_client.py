"""Async gRPC calls to the two Triton models, with a timeout and one bounded retry."""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from . import pipeline as P

LOG = logging.getLogger("reference_service.triton_client")


class TritonUnavailable(Exception):
    """Triton cannot be reached or is not ready: the gateway answers 503."""


class TritonOverloaded(Exception):
    """Triton's bounded queue refused or timed out the request: the gateway answers 429."""


class TritonClient:
    """Detector and recogniser calls over Triton's gRPC endpoint."""

    def __init__(
        self,
        url: str,
        det_model: str,
        rec_model: str,
        timeout_s: float,
        retries: int,
        rec_max_batch: int,
        metrics,
    ) -> None:
        import tritonclient.grpc.aio as grpcaio

        self._grpc = grpcaio
        self._client = grpcaio.InferenceServerClient(url)
        self.det_model, self.rec_model = det_model, rec_model
        self.timeout_s, self.retries, self.rec_max_batch = timeout_s, retries, rec_max_batch
        self.metrics = metrics

    async def close(self) -> None:
        await self._client.close()

    async def ready(self, timeout_s: float = 1.0) -> bool:
        """True when the server and both models report ready."""
        try:
            return bool(
                await self._client.is_server_ready(client_timeout=timeout_s)
                and await self._client.is_model_ready(self.det_model, client_timeout=timeout_s)
                and await self._client.is_model_ready(self.rec_model, client_timeout=timeout_s)
            )
        except Exception:  # noqa: BLE001 - any failure means "not ready"
            return False

    async def _infer(self, model: str, inputs: dict[str, np.ndarray]):
        from tritonclient.utils import InferenceServerException, np_to_triton_dtype

        attempt = 0
        while True:
            tensors = []
            for name, arr in inputs.items():
                t = self._grpc.InferInput(name, list(arr.shape), np_to_triton_dtype(arr.dtype))
                t.set_data_from_numpy(arr)
                tensors.append(t)
            try:
                return await self._client.infer(model, tensors, client_timeout=self.timeout_s)
            except InferenceServerException as exc:
                text = (exc.message() or "").lower()
                status = str(exc.status() or "")
                # Triton's bounded queue: "Exceeds maximum queue size" when full, "Request timeout
                # expired" when a request waited longer than the queue policy's timeout.
                if "queue" in text or "exceeds maximum" in text or "timeout expired" in text:
                    self.metrics.triton_errors.labels(model, "queue_full").inc()
                    raise TritonOverloaded() from None
                kind = "deadline" if "DEADLINE" in status or "deadline" in text else "unavailable"
                self.metrics.triton_errors.labels(model, kind).inc()
                LOG.warning(
                    "triton %s call failed (%s, attempt %d): %s",
                    model,
                    kind,
                    attempt + 1,
                    (exc.message() or "")[:200],
                )
                if attempt >= self.retries:
                    raise TritonUnavailable() from None
                attempt += 1
                await asyncio.sleep(0.05)

    async def detect(self, page: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Boxes [k, 4, 2] (in ``page`` coordinates) and scores [k] for one resized page."""
        res = await self._infer(self.det_model, {"image": page[None]})
        n = int(res.as_numpy("count")[0, 0])
        boxes = res.as_numpy("boxes")[0, :n].reshape(-1, 4, 2)
        return boxes, res.as_numpy("scores")[0, :n]

    async def recognise(self, crops: list[np.ndarray]) -> list[tuple[str, float]]:
        """(text, confidence) per resized crop; requests of up to ``rec_max_batch`` crops of one
        width bucket, sent concurrently."""
        calls, order = [], []
        for width, part in P.rec_calls([c.shape[1] for c in crops], self.rec_max_batch):
            batch, widths = P.pad_crops([crops[i] for i in part], width)
            calls.append(self._infer(self.rec_model, {"crops": batch, "widths": widths}))
            order.append(part)
        results: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        for part, res in zip(order, await asyncio.gather(*calls), strict=False):
            texts = res.as_numpy("text").reshape(-1)
            confs = res.as_numpy("confidence").reshape(-1)
            for i, t, c in zip(part, texts, confs, strict=False):
                results[i] = (t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t), float(c))
        return results
