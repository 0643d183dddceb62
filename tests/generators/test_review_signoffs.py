"""The review page shows the sign-offs (seed 000 §2.4: legal signs every review), each marked by whether
its hash is the design's current one (AK512's `design_sha256`)."""

from __future__ import annotations

from archkit import api
from archkit.checks.ak512_design_not_signed_off import design_sha256
from archkit.spec import load_text

SPEC = """\
apiVersion: archkit/v1
metadata:
  name: t
  signoffs:
    - {{by: Li Wei, role: legal, spec_sha256: "{current}", date: 2026-11-30}}
    - {{by: Chen Jing, role: security, spec_sha256: "{old}", date: 2026-10-01}}
dataflow:
  stages:
    - {{id: api, kind: ingress}}
"""


def test_review_page_lists_signoffs_and_which_cover_this_design():
    draft = load_text(SPEC.format(current="0" * 64, old="1" * 64))
    assert draft.spec is not None
    current = design_sha256(draft.spec)  # the sign-offs are not part of the hash
    res = load_text(SPEC.format(current=current, old="ab" * 32))
    assert res.spec is not None and design_sha256(res.spec) == current
    files, _ = api.generate(res.spec, "t.yaml", only=["review"], formats=())
    page = files["review.html"]
    assert isinstance(page, str)
    assert (
        f"Sign-offs: legal by Li Wei on 2026-11-30 (design <code>{current[:12]}</code>, this design) · "
        "security by Chen Jing on 2026-10-01 (design <code>abababababab</code>, <strong>an earlier design</strong>)"
    ) in page


def test_no_signoffs_no_line():
    res = load_text(
        "apiVersion: archkit/v1\nmetadata: {name: t}\ndataflow: {stages: [{id: api, kind: ingress}]}\n"
    )
    assert res.spec is not None
    files, _ = api.generate(res.spec, "t.yaml", only=["review"], formats=())
    assert 'id="signoffs"' not in files["review.html"]
