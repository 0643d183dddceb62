"""AK315: a service image is not pinned to a patch version or a digest."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity

# A tag pins the environment when it names a patch release (1.25.3, 3.11.9-slim) or a dated
# vendor release such as NVIDIA's YY.MM (23.10-py3), the form seed 000 §4.1 itself pins.
_PATCH = re.compile(r"^v?\d+\.\d+\.\d+")
_DATED = re.compile(r"^\d{2}\.\d{2}(?:[.-]|$)")


def unpinned_reason(image: str) -> str | None:
    """Why `image` floats (None when a digest or a patch/dated tag pins it)."""
    if "@sha256:" in image:
        return None
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        return "has no tag (Docker reads it as 'latest')"
    tag = name.split(":", 1)[1]
    if tag.lower() == "latest":
        return "is tagged 'latest'"
    if _PATCH.match(tag) or _DATED.match(tag):
        return None
    return f"is tagged '{tag}', which a new patch release moves"


@register
class ImageNotPinned(Rule):
    """A service image floats: no digest and no patch-version tag."""

    code = "AK315"
    name = "image-not-pinned"
    severity = Severity.WARNING
    source = (
        "seed 000 §4.1 (base image pinned to a patch version; the CUDA drawn is the CUDA the image locks)"
    )
    rationale = """
Seed 000 §4.1 builds every serving image on a base pinned to a patch release (the official
NVIDIA image `23.10-py3`, which fixes CUDA 11.8) and asserts the key package versions after
install, because an image that floats changes the CUDA, the framework and the driver
contract under a running design. `:latest`, a missing tag or a minor-only tag (`3.11`) moves
with every upstream push; pin a patch tag or, better, a digest (`@sha256:...`).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for svc in ctx.spec.topology.services:
            if not svc.image:
                continue
            why = unpinned_reason(svc.image)
            if why:
                yield ctx.at(svc, "image", f"service '{svc.id}' image '{svc.image}' {why}")
