"""The Triton Python-backend model class for one role, detector or recogniser.

Imported by the ``model.py`` that ``triton_native`` writes into each model's folder; it runs
inside the backend's stub process, which holds the model (triton_worker's detector_fn /
recogniser_fn, the same code PyTriton served) and answers Triton's batched requests directly.
"""

from __future__ import annotations

import json

import numpy as np

INPUTS = {"detector": ("image",), "recogniser": ("crops", "widths")}


def make_model(role: str) -> type:
    """A ``TritonPythonModel`` class running ``role``'s callable on each batch of requests."""
    import triton_python_backend_utils as pb_utils  # only importable inside the stub

    from .triton_worker import detector_fn, recogniser_fn

    names = INPUTS[role]

    class TritonPythonModel:
        def initialize(self, args: dict) -> None:
            params = json.loads(args["model_config"]).get("parameters", {})
            threads = int(params["threads"]["string_value"])
            runtime = params["runtime"]["string_value"]
            make = detector_fn if role == "detector" else recogniser_fn
            self.infer = make(threads, runtime)

        def execute(self, requests: list) -> list:
            batch = [{n: pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in names} for r in requests]
            out = []
            for res in self.infer(batch):
                tensors = [pb_utils.Tensor(k, np.ascontiguousarray(v)) for k, v in res.items()]
                out.append(pb_utils.InferenceResponse(output_tensors=tensors))
            return out

    return TritonPythonModel
