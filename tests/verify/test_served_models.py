"""The served-models source (VM240, VM241) on recorded listings: both reference gateways' shapes, bad answers.

The live check against the running OCR reference service is tests/verify/test_triton_live.py
(`test_served_model_hashes`); here the listings are the JSON those gateways answer, as recorded.
"""

from __future__ import annotations

import pytest

from archkit.verify.served_models import listed_hashes

DET = "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9"

# reference_service/gateway.py `/v1/models` (trimmed to what VM240 reads)
OCR = {
    "pipeline": "ocr-1",
    "models": [
        {"name": "ocr_detector", "file": "ch_PP-OCRv4_det_infer.onnx", "sha256": DET},
        {"name": "ocr_recogniser", "file": "ch_PP-OCRv4_rec_infer.onnx", "sha256": DET.upper()},
    ],
}
# reference_service/llm/gateway.py `/v1/models` before the GGUF was hashed (sha256 still null)
LLM = {"object": "list", "data": [{"id": "qwen", "object": "model", "sha256": None}, 7, {"id": 3}]}


def test_both_listing_shapes():
    assert listed_hashes(OCR) == {"ocr_detector": DET, "ocr_recogniser": DET}  # hex compared lower-case
    assert listed_hashes(LLM) == {"qwen": None}


@pytest.mark.parametrize(
    "body,why",
    [
        ([1, 2], "not a JSON object"),
        ({"models": 5}, "no 'models' or 'data' list"),
        (None, "not a JSON object"),
    ],
)
def test_bad_listings_say_why(body, why):
    with pytest.raises(ValueError, match=why):
        listed_hashes(body)


def test_an_unreachable_listing_is_unknown_not_drift():
    from archkit.spec import load_text
    from archkit.verify import Status
    from archkit.verify.served_models import check_served_models

    spec = load_text(
        "apiVersion: archkit/v1\nmetadata: {name: t}\ndataflow:\n  stages:\n"
        f"    - {{id: m, kind: model, model: {{name: ocr_detector, sha256: {DET}}}}}\n",
        "t.yaml",
    ).spec
    found = check_served_models(spec, "http://127.0.0.1:9/v1/models", timeout_s=2)  # discard port: refused
    assert [(f.code, f.status) for f in found] == [("VM241", Status.UNKNOWN)]
    assert found[0].message.startswith(
        "cannot read the model listing at http://127.0.0.1:9/v1/models: cannot reach it"
    )
