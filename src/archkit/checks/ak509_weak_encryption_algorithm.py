"""AK509: sensitive data is encrypted with a weak or unauthenticated algorithm."""

from __future__ import annotations

import re
from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic

# Broken or unauthenticated: DES/3DES (NIST SP 800-131A Rev. 2 disallows them for encryption
# after 2023), RC4 (RFC 7465 prohibits it in TLS), ECB mode (leaks equal blocks), MD5/SHA-1
# are hashes, not ciphers.
_WEAK = re.compile(
    r"(^|[^a-z0-9])(des|3des|tdes|triple-?des|rc2|rc4|blowfish|ecb|md5|sha-?1|none|plain)([^a-z0-9]|$)"
)


def weakness(algorithm: str) -> str | None:
    """Why `algorithm` does not protect data at rest (None when no known weakness matches)."""
    m = _WEAK.search(algorithm.strip().lower())
    return None if m is None else m.group(2)


@register
class WeakEncryptionAlgorithm(Rule):
    """A stage's declared encryption algorithm is broken, unauthenticated or not a cipher."""

    code = "AK509"
    name = "weak-encryption-algorithm"
    source = (
        "seed 000 §2.4 (face vectors encrypted with SM4 as they are created, keys in a KMS); NIST SP 800-131A"
    )
    rationale = """
Seed 000 §2.4 names the algorithm (SM4, the Chinese national block cipher) as part of the
design, next to the KMS that holds the keys. A declared algorithm is a promise a reviewer
can check: DES and 3DES are withdrawn (NIST SP 800-131A Rev. 2), RC4 is prohibited in TLS
(RFC 7465), ECB mode leaks equal blocks, and MD5 or SHA-1 are digests, not encryption. Use
an authenticated mode of AES or SM4 (AES-256-GCM, SM4-GCM) or ChaCha20-Poly1305.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            enc = st.encryption
            if enc is None or not enc.algorithm:
                continue
            weak = weakness(enc.algorithm)
            if weak:
                yield ctx.at(
                    enc,
                    "algorithm",
                    f"stage '{st.id}' encrypts with '{enc.algorithm}' ({weak} does not protect data)",
                )
