"""Who holds the keys of encrypted data (seed 000 §2.4: face vectors encrypted with SM4, keys in a KMS).

Seed 000 §2.4 names the key's custodian as part of the design: the vectors are encrypted the moment
they are created and the key is held by a KMS, not by the service that stores them. A key that lives
in the application's configuration or in a file next to the data gives whoever reads the data the
means to decrypt it, so encryption at rest then protects against little more than a lost disk
(rule AK514).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from archkit.spec.base import Node

__all__ = ["KeyCustody"]

CustodyKind = Literal["kms", "hsm", "application", "file", "none"]


class KeyCustody(Node):
    """Where the data key (or the key that wraps it) is held (seed 000 §2.4: keys in a KMS)."""

    kind: CustodyKind = Field(
        description="kms: a key-management service holds the key and decrypts on request; hsm: a "
        "hardware security module; application: the key is in the service's own memory or "
        "configuration; file: a key file on disk or in a mounted volume; none: no key is managed"
    )
    service: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="the KMS or HSM that holds the key, e.g. aliyun-kms, aws-kms, vault-transit "
        "(rule AK514 asks for it when kind is kms or hsm)",
    )
