"""AK510: training data is not declared encrypted."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class TrainingDataUnencrypted(Rule):
    """Training data is declared unencrypted, or a training pool exists and nothing says it is encrypted."""

    code = "AK510"
    name = "training-data-unencrypted"
    source = "seed 004 §4.3 (model weights are not the secret, the training data is: encrypted with KMS)"
    rationale = """
Seed 004 §4.3: teams guard model weights and leave the training set in a world-readable
bucket, while membership-inference attacks recover training data from a model. The team
requires training data encrypted at rest with KMS keys rotated at most every 90 days. A spec
that sets `policies.security.training_data_encrypted: false`, or that has a training node
pool and does not declare it, is flagged.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        sec = spec.policies.security
        if sec is not None and sec.training_data_encrypted is False:
            yield ctx.at(sec, "training_data_encrypted", "training data is declared unencrypted")
            return
        if sec is not None and sec.training_data_encrypted:
            return
        for pool in spec.topology.node_pools:
            if pool.role == "training":
                yield ctx.at(
                    pool,
                    "role",
                    f"node pool '{pool.id}' trains models and nothing declares the training data encrypted",
                    hint="set policies.security.training_data_encrypted: true",
                )
                return
