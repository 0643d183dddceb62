"""The HTTP gateway: validate, cache, detect, crop, recognise, post-process.

``POST /v1/ocr`` takes the raw image bytes (PNG, JPEG or WebP) as the request body.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import hashlib
import io
import json
import logging
import time
from contextlib import asynccontextmanager

import cv2
import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from PIL import Image, UnidentifiedImageError
from starlette.requests import ClientDisconnect

from . import pipeline as P
from .cache import make_cache
from .common.gateway import OVERLOADED, Admission, error, gateway_app, retry_after, watch_readiness
from .drift import DriftMonitor, reference_confidences
from .metrics import Metrics
from .models import DET_FILE, REC_FILE
from .settings import PROFILES, Settings
from .triton_client import TritonClient, TritonOverloaded, TritonUnavailable

LOG = logging.getLogger("reference_service.gateway")
ACCEPTED_TYPES = {"image/png", "image/jpeg", "image/webp", "application/octet-stream"}
ACCEPTED_FORMATS = {"PNG", "JPEG", "WEBP"}
# Pixel modes decoded faithfully (see _to_rgb); anything else is refused with 415.
ACCEPTED_MODES = {
    "1",
    "L",
    "P",
    "RGB",
    "RGBA",
    "CMYK",
    "YCbCr",
    "LA",
    "PA",
    "La",
    "RGBa",
    "I",
    "I;16",
    "I;16L",
    "I;16B",
    "I;16N",
    "F",
}
# Pages at or above this size trim the heap after answering (see _trim_heap).
TRIM_AFTER_PIXELS = 4_000_000
try:
    _LIBC: ctypes.CDLL | None = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _LIBC.malloc_trim  # noqa: B018 - glibc only; elsewhere no trimming
except (OSError, AttributeError):
    _LIBC = None
PIPELINE_VERSION = "ppocrv4-det640-rec48w75-space8-v4"  # part of the cache key: new models or sizes, new keys
# A second guard inside PIL itself, in case a decoder reports a size lazily.
Image.MAX_IMAGE_PIXELS = None


class InputError(Exception):
    """A request the gateway refuses with a 4xx and a short message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


SERVING_PACKAGES = ("nvidia-pytriton",)  # and the backend's own package (runtimes.BACKENDS' names)


def _versions(backend: str) -> dict[str, str]:
    """The installed versions of what serves the models: the backend's package and PyTriton."""
    from importlib import metadata

    out = {}
    for name in (backend, *SERVING_PACKAGES):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def check_header(body: bytes, s: Settings) -> int:
    """Validate format and size from the image header only (PIL's lazy open decodes nothing).

    Returns the page's pixel count, which the request reserves from the decode budget.
    """
    if not body:
        raise InputError(400, "empty_body", "request body is empty; send the image bytes")
    try:
        with Image.open(io.BytesIO(body)) as img:
            fmt, (w, h), mode = img.format, img.size, img.mode
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        raise InputError(400, "not_an_image", "body is not a PNG, JPEG or WebP image") from None
    if fmt not in ACCEPTED_FORMATS:
        raise InputError(415, "unsupported_format", f"image format {fmt} not accepted; use PNG, JPEG or WebP")
    if w * h > s.max_pixels or max(w, h) > s.max_side:
        raise InputError(
            413,
            "image_too_large",
            f"image is {w}x{h}; limit is {s.max_pixels} pixels and {s.max_side} px per side",
        )
    if min(w, h) < s.min_side:
        raise InputError(
            422, "image_too_small", f"image is {w}x{h}; each side must be at least {s.min_side} px"
        )
    if mode not in ACCEPTED_MODES:
        raise InputError(
            415,
            "unsupported_pixel_format",
            f"pixel mode {mode} is not accepted; send 8- or 16-bit grey, palette, RGB(A) or CMYK",
        )
    return w * h


def _to_rgb(img: Image.Image) -> np.ndarray:
    """An RGB uint8 array of any accepted mode, with the page's real tones.

    16-bit and 32-bit grey pages are scaled to 8 bits (PIL's ``convert("RGB")`` clips them to
    255, which turned a 16-bit page white and returned empty text); transparent pages are
    composited over white, as a viewer shows them (text drawn on a transparent background
    would otherwise become black on black).
    """
    mode = img.mode
    if mode in ("I;16", "I;16L", "I;16B", "I;16N", "I"):
        grey = np.asarray(img, dtype=np.uint32)
        top = 65535 if mode.startswith("I;16") or int(grey.max(initial=0)) > 255 else 255
        grey8 = (grey * 255 // top).astype(np.uint8) if top != 255 else grey.astype(np.uint8)
        return np.repeat(grey8[:, :, None], 3, axis=2)
    if mode == "F":
        grey = np.asarray(img, dtype=np.float32)
        scale = 255.0 if float(grey.max(initial=0.0)) <= 1.0 else 1.0
        return np.repeat(np.clip(grey * scale, 0, 255).astype(np.uint8)[:, :, None], 3, axis=2)
    if mode in ("RGBA", "LA", "PA", "La", "RGBa") or (mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        page = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        page.alpha_composite(rgba)
        del rgba
        return np.asarray(page.convert("RGB"))
    return np.asarray(img if mode == "RGB" else img.convert("RGB"))


def decode_image(body: bytes) -> np.ndarray:
    """Decode a header-checked image to BGR uint8 (truncated or corrupt data: 400).

    Peak memory is PIL's buffer plus one array (~7 bytes per pixel): the BGR swap is done
    in place rather than through a reversed copy.
    """
    try:
        with Image.open(io.BytesIO(body)) as img:
            img.load()
            rgb = _to_rgb(img)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        raise InputError(400, "corrupt_image", "image data is truncated or corrupt") from None
    bgr = np.array(rgb, copy=not rgb.flags.writeable or not rgb.flags.c_contiguous)
    del rgb
    return cv2.cvtColor(bgr, cv2.COLOR_RGB2BGR, dst=bgr)


class PixelBudget:
    """Pixels of pages being decoded and processed at once, bounded (memory per request).

    A request reserves its page's pixels before decoding and returns them when it answers;
    when the budget is spent it waits, up to a deadline, and is then refused with 429.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity, self.used = capacity, 0
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def reserve(self, pixels: int, timeout_s: float):
        pixels = min(pixels, self.capacity)
        async with self._cond:
            try:
                await asyncio.wait_for(
                    self._cond.wait_for(lambda: self.used + pixels <= self.capacity), timeout_s
                )
            except TimeoutError:
                raise DecodeBudgetSpent() from None
            self.used += pixels
        try:
            yield
        finally:
            async with self._cond:
                self.used -= pixels
                self._cond.notify_all()


class DecodeBudgetSpent(Exception):
    """No room in the decode budget within the deadline (answered 429)."""


def _trim_heap() -> None:
    """Give freed decode buffers back to the OS (glibc keeps large freed arenas otherwise)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _check_and_hash(body: bytes, s: Settings) -> tuple[str, int]:
    pixels = check_header(body, s)
    return hashlib.sha256(body).hexdigest(), pixels


def _prepare_det(img: np.ndarray):
    boxed, pad = P.letterbox(img)
    page, rh, rw = P.det_resize(boxed)
    return page, rh, rw, pad


def _crop_all(img: np.ndarray, boxes: np.ndarray, rh: float, rw: float, pad: int, boxed_shape):
    """Map det boxes to original coordinates and cut + resize the line crops."""
    scale = np.array([rw, rh], dtype=np.float32)
    originals, crops = [], []
    boxed = img if pad == 0 else P.letterbox(img)[0]
    for box in P.sorted_boxes(boxes):
        b = box * scale
        crops.append(P.rec_resize(P.crop_box(boxed, b)))
        o = b.copy()
        o[:, 1] -= pad
        o[:, 0] = np.clip(o[:, 0], 0, img.shape[1])
        o[:, 1] = np.clip(o[:, 1], 0, img.shape[0])
        originals.append(o)
    return originals, crops


class _StageClock:
    """Records a stage's duration in the histogram and in this request's timings (ms)."""

    def __init__(self, histogram, timings: dict[str, float]) -> None:
        self.histogram, self.timings, self.stage = histogram, timings, ""

    def labels(self, stage: str) -> _StageClock:
        self.stage = stage
        return self

    def observe(self, seconds: float) -> None:
        self.histogram.labels(self.stage).observe(seconds)
        self.timings[self.stage] = round(seconds * 1e3, 2)


class Gateway:
    """State of one gateway: settings, metrics, cache, Triton client, concurrency."""

    def __init__(self, settings: Settings, supervisor=None) -> None:
        self.s = settings
        self.metrics = Metrics()
        self.supervisor = supervisor
        self.cache = make_cache(settings.redis_url, settings.cache_entries, settings.cache_ttl_s)
        self.triton: TritonClient | None = None
        self.ready = False
        self.admission = Admission(settings.max_inflight, self.metrics.inflight)
        # Uploads being received hold no inference slot, so they have a limit of their own.
        self.receiving = 0
        self.pixels = PixelBudget(settings.decode_budget_pixels)
        self._tasks: list[asyncio.Task] = []
        self._created: float | None = time.monotonic()
        try:
            self.drift: DriftMonitor | None = DriftMonitor(reference_confidences())
        except (OSError, ValueError, KeyError):
            self.drift = None  # no recorded golden outputs: no drift signal

    async def start(self) -> None:
        self.triton = TritonClient(
            f"{self.s.triton_host}:{self.s.triton_grpc_port}",
            self.s.detector.name,
            self.s.recogniser.name,
            self.s.triton_timeout_s,
            self.s.triton_retries,
            self.s.rec_request_crops,
            self.metrics,
        )
        if self.supervisor is not None:
            self.supervisor.metrics = self.metrics
            await self.supervisor.start()
        self._tasks.append(asyncio.create_task(self._watch_readiness()))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        if self.supervisor is not None:
            await self.supervisor.stop()
        if self.triton is not None:
            await self.triton.close()
        await self.cache.close()

    async def _watch_readiness(self) -> None:
        await watch_readiness(
            lambda: self.triton.ready(timeout_s=2.0), lambda: self.ready, self._became_ready, self._set_ready
        )

    def _became_ready(self) -> None:
        if self.supervisor is not None:
            self.supervisor.mark_ready()
        elif self._created is not None:  # external Triton: time from gateway start, once
            self.metrics.cold_start.set(time.monotonic() - self._created)
            self._created = None

    def _set_ready(self, ok: bool) -> None:
        self.ready = ok
        self.metrics.triton_ready.set(1 if ok else 0)

    async def ocr(self, body: bytes, use_cache: bool = True) -> tuple[dict, str, dict]:
        """Run the pipeline; returns (result, cache outcome: hit, miss or bypass, stage ms)."""
        timings: dict[str, float] = {}
        m = _StageClock(self.metrics.stage_seconds, timings)
        t = time.perf_counter()
        key, pixels = await asyncio.to_thread(_check_and_hash, body, self.s)
        m.labels("validate").observe(time.perf_counter() - t)

        t = time.perf_counter()
        cached = await self.cache.get(f"{PIPELINE_VERSION}:{key}") if use_cache else None
        m.labels("cache").observe(time.perf_counter() - t)
        if cached is not None:
            self.metrics.cache.labels("hit").inc()
            return json.loads(cached), "hit", timings
        self.metrics.cache.labels("miss" if use_cache else "bypass").inc()
        async with self.pixels.reserve(pixels, self.s.decode_wait_s):
            try:
                return await self._infer(body, key, use_cache, m, timings)
            finally:
                if pixels >= TRIM_AFTER_PIXELS:
                    await asyncio.to_thread(_trim_heap)

    async def _infer(
        self, body: bytes, key: str, use_cache: bool, m: _StageClock, timings: dict[str, float]
    ) -> tuple[dict, str, dict]:
        t = time.perf_counter()
        img = await asyncio.to_thread(decode_image, body)
        m.labels("decode").observe(time.perf_counter() - t)
        if not self.ready:
            raise TritonUnavailable()

        t = time.perf_counter()
        page, rh, rw, pad = await asyncio.to_thread(_prepare_det, img)
        boxes, _scores = await self.triton.detect(page)
        m.labels("detect").observe(time.perf_counter() - t)

        t = time.perf_counter()
        originals, crops = await asyncio.to_thread(_crop_all, img, boxes, rh, rw, pad, page.shape)
        m.labels("crop").observe(time.perf_counter() - t)

        t = time.perf_counter()
        recognised = await self.triton.recognise(crops) if crops else []
        m.labels("recognise").observe(time.perf_counter() - t)

        t = time.perf_counter()
        lines = [
            {"text": text, "confidence": round(conf, 4), "box": np.round(box).astype(int).tolist()}
            for box, (text, conf) in zip(originals, recognised, strict=False)
            if conf >= P.TEXT_SCORE and text.strip()
        ]
        result = {
            "text": "\n".join(line["text"] for line in lines),
            "lines": lines,
            "confidence": round(float(np.mean([ln["confidence"] for ln in lines])), 4) if lines else 0.0,
            "width": int(img.shape[1]),
            "height": int(img.shape[0]),
            "sha256": key,
            "pipeline": PIPELINE_VERSION,
        }
        self.metrics.lines.observe(len(lines))
        if self.drift is not None and lines:
            self.metrics.drift_p_value.set(self.drift.observe(result["confidence"]))
        if self.s.cache_entries > 0 or self.s.redis_url:
            await self.cache.set(f"{PIPELINE_VERSION}:{key}", json.dumps(result).encode())
        m.labels("postprocess").observe(time.perf_counter() - t)
        return result, ("miss" if use_cache else "bypass"), timings


def create_app(settings: Settings, supervisor=None) -> FastAPI:
    """The FastAPI app; ``supervisor`` (optional) starts and restarts Triton."""
    gw = Gateway(settings, supervisor)
    app = gateway_app("OCR reference service", gw, gw.metrics.registry, LOG)
    s, met = settings, gw.metrics

    @app.get("/readyz")
    async def readyz():
        if gw.ready:
            return {"status": "ready", "models": [s.detector.name, s.recogniser.name]}
        return error(503, "not_ready", "Triton models are not ready", retry_after(s.retry_after_s))

    @app.get("/v1/models")
    async def models():
        from .models import model_sha256
        from .runtimes import choose, default_precision

        # The same choice the Triton worker makes (`--backend auto`, the same environment):
        # the golden outputs differ by precision, so rollback verification needs it.
        backend = choose(PROFILES[s.profile].backends)
        precision = default_precision(backend)
        runtime: dict = {"backend": backend, "precision": precision, "versions": _versions(backend)}
        if precision == "int8":
            # The files served: quantised from the ONNX files above (quantise.py); their
            # SHA-256 are pinned there and in the spec's model entries.
            from .quantise import int8_dir, int8_files, sha256

            runtime["files"] = [
                {"file": f, "sha256": sha256(int8_dir() / f)}
                for m in (DET_FILE, REC_FILE)
                for f in int8_files(m)
            ]
        return {
            "pipeline": PIPELINE_VERSION,
            "models": [
                {"name": s.detector.name, "file": DET_FILE, "sha256": model_sha256(DET_FILE)},
                {"name": s.recogniser.name, "file": REC_FILE, "sha256": model_sha256(REC_FILE)},
            ],
            # versions too: a calibration records them (archkit.machine.fingerprint), since a new
            # OpenVINO or Triton changes the service times it measured
            "runtime": runtime,
        }

    @app.post("/v1/ocr")
    async def ocr(request: Request):
        start = time.perf_counter()
        resp = await _ocr(request)
        code = str(resp.status_code)
        met.requests.labels(code).inc()
        met.request_seconds.labels(code).observe(time.perf_counter() - start)
        return resp

    async def _read_body(request: Request, declared: int | None) -> bytes:
        """The whole body, or InputError: slow, stalled or short bodies end with 408.

        Three limits (settings): the body within body_timeout_s, no gap between chunks over
        body_idle_s, and after the first second at least min_body_rate_bps on average.
        """
        chunks, size = [], 0
        started = time.monotonic()
        deadline = started + s.body_timeout_s
        stream = request.stream().__aiter__()
        while True:
            now = time.monotonic()
            wait = min(s.body_idle_s, deadline - now)
            if wait <= 0:
                raise InputError(408, "body_timeout", f"body not received within {s.body_timeout_s:g} s")
            try:
                chunk = await asyncio.wait_for(stream.__anext__(), wait)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise InputError(
                    408, "body_timeout", f"body stalled: {size} of {declared or '?'} bytes received"
                ) from None
            size += len(chunk)
            if size > s.max_body_bytes:
                raise InputError(413, "body_too_large", f"body exceeds {s.max_body_bytes} bytes")
            chunks.append(chunk)
            elapsed = time.monotonic() - started
            if chunk and elapsed > 1.0 and size / elapsed < s.min_body_rate_bps:
                raise InputError(
                    408,
                    "body_too_slow",
                    f"body arrives at {size / elapsed:.0f} B/s; minimum is {s.min_body_rate_bps}",
                )
        if declared is not None and size != declared:
            raise InputError(400, "body_incomplete", f"body is {size} bytes; Content-Length said {declared}")
        return b"".join(chunks)

    def _close(resp: JSONResponse) -> JSONResponse:
        # The body was not read to its end: the connection cannot carry another request.
        resp.headers["connection"] = "close"
        return resp

    async def _ocr(request: Request):
        # 1. Headers only: type and declared length, before a byte of the body is read.
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in ACCEPTED_TYPES:
            met.rejected.labels("content_type").inc()
            return _close(
                error(
                    415,
                    "unsupported_media_type",
                    "Content-Type must be image/png, image/jpeg, image/webp or application/octet-stream",
                )
            )
        raw_length = request.headers.get("content-length")
        declared = None
        if raw_length is not None:
            if not raw_length.isdigit() or len(raw_length) > 12:
                met.rejected.labels("bad_length").inc()
                return _close(error(400, "bad_content_length", "Content-Length is not a byte count"))
            declared = int(raw_length)
            if declared > s.max_body_bytes:
                met.rejected.labels("body_too_large").inc()
                return _close(
                    error(413, "body_too_large", f"body is {declared} bytes; limit is {s.max_body_bytes}")
                )
        if gw.receiving >= s.max_receiving:
            met.rejected.labels("receiving").inc()
            return _close(
                error(
                    429,
                    "overloaded",
                    "too many uploads in progress; retry later",
                    retry_after(s.retry_after_s),
                )
            )
        # 2. The body, bounded in time and size, without holding an inference slot.
        gw.receiving += 1
        try:
            body = await _read_body(request, declared)
        except InputError as exc:
            met.rejected.labels(exc.code).inc()
            return _close(error(exc.status, exc.code, exc.message))
        except ClientDisconnect:
            met.rejected.labels("client_gone").inc()
            return Response(status_code=400)  # nobody is listening; the metric records it
        finally:
            gw.receiving -= 1
        # 3. Only a whole body competes for an inference slot.
        if gw.admission.full:
            met.rejected.labels("concurrency").inc()
            return error(429, "overloaded", OVERLOADED, retry_after(s.retry_after_s))
        gw.admission.enter()
        try:
            # Cache-Control: no-cache forces inference (rollback verification uses it).
            use_cache = "no-cache" not in request.headers.get("cache-control", "").lower()
            result, outcome, timings = await gw.ocr(body, use_cache)
        except InputError as exc:
            met.rejected.labels(exc.code).inc()
            return error(exc.status, exc.code, exc.message)
        except DecodeBudgetSpent:
            met.rejected.labels("decode_budget").inc()
            return error(
                429,
                "overloaded",
                "too many large pages being decoded; retry later",
                retry_after(s.retry_after_s),
            )
        except TritonOverloaded:
            met.rejected.labels("triton_queue_full").inc()
            return error(
                429,
                "overloaded",
                "inference queue is full; retry later",
                retry_after(s.retry_after_s),
            )
        except TritonUnavailable:
            return error(
                503,
                "triton_unavailable",
                "inference server is not available; retry later",
                retry_after(s.retry_after_s),
            )
        finally:
            gw.admission.leave()
        if result["lines"] and result["confidence"] >= s.confidence_floor:
            met.effective.inc()
        # Per-request stage timings ride in a header, outside the cached (deterministic) body.
        header = ",".join(f"{k}={v}" for k, v in timings.items())
        return JSONResponse(result, headers={"X-Cache": outcome, "X-Stage-Timings-Ms": header})

    return app


def json_400_protocol() -> type:
    """uvicorn's h11 protocol answering unparsable requests in the gateway's JSON shape.

    uvicorn answers a request it cannot parse itself, before the app sees it, in plain text;
    this subclass sends the documented ``{"error": {...}}`` body instead.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class JsonErrorH11Protocol(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            body = json.dumps({"error": {"code": "bad_request", "message": msg}}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    return JsonErrorH11Protocol
