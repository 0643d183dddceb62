"""What the OCR service (reference_service/*.py) and the LLM service (reference_service/llm/) share.

Both put a FastAPI gateway on 127.0.0.1 in front of an inference server that the gateway runs as
a child process group. The parts that are the same in both live here, once:

- ``supervisor``: start the server, watch it, restart it with backoff, stop it, leave nothing;
- ``gateway``: the error shape, the app's fixed routes (/healthz, /metrics, 404/405/500) and the
  readiness probe loop;
- ``serve``: uvicorn on the gateway's port, the ``ready:`` line or exit 1, the run folder removed.

What differs for a real reason stays in each service, said where it stands: the input caps and
body reading (an image upload vs a JSON prompt), the metrics (names and buckets bound in each
service's spec), the admission counters' reasons, the OCR service's Triton leftovers and token file.
"""
