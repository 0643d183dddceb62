"""AK506: raw payloads are written to logs."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class RawPayloadLogged(Rule):
    """A stage logs raw request payloads (images, audio, documents)."""

    code = "AK506"
    name = "raw-payload-logged"
    source = "seed 004 §4.2 (base64 images in log.info grew logs to 2 TB/day; log MD5 and size only)"
    rationale = """
Raw payloads in logs leak personal data to every log reader and blow up log volume (a 2 MB
image is 2.7 MB of base64). Log a hash and the size; keep the object in storage and look it
up by hash when needed. List such fields in `observability.logging.never_log`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            if st.logs_payload:
                yield ctx.at(st, "logs_payload", f"stage '{st.id}' writes raw payloads to its logs")
