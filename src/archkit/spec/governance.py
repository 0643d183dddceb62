"""Governance of a design: consent, sign-off, confidence breakers and batch GPU jobs.

- Seed 000 §2.4: face capture needs separate, explicit consent under PIPL, and legal signs the
  architecture off at every review (`Stage.consent`, `metadata.signoffs`; rules AK511, AK512).
- Seed 004 §3.2: when a model's mean confidence falls below 0.7 the gateway moves its traffic to a
  backup model (`model.confidence_breaker`; rule AK410).
- Seed 004 §4.4: a nightly batch job sent 100 requests at once to the online OCR's GPU; a semaphore
  of three fixed it (`jobs`; rule AK332 counts each job's memory at its concurrency cap, AK233 its
  GPU time against the online stages' utilisation, `archkit.perf.jobs`).
- Seed 004 §1: nobody owned the cache (`Stage.owner`, `Service.owner`; rule AK115).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from archkit.spec.base import Fraction, Id, Ms, Node
from archkit.spec.refs import IdOf, RefTo

__all__ = ["ConfidenceBreaker", "Consent", "GpuJob", "SignOff"]

Owner = Annotated[str, Field(min_length=1, max_length=256, description="a team or person contact")]


class Consent(Node):
    """How the people whose data a stage captures agreed to it (seed 000 §2.4, PIPL art. 29)."""

    separate: bool = Field(
        description="asked for on its own, not bundled into general terms (PIPL art. 29 for biometric data)"
    )
    purpose: str | None = Field(
        None, max_length=512, description="what the capture is for, as the user is told"
    )
    record: str | None = Field(None, max_length=512, description="where each consent is recorded")


class SignOff(Node):
    """Who approved which version of the design, and when (seed 000 §2.4: legal signs every review)."""

    by: Owner
    role: str = Field("legal", max_length=128, description="e.g. legal, security, architecture")
    spec_sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="the design approved: `archkit check` prints the spec's current hash (AK512), which "
        "covers everything written in the spec except `metadata.signoffs`",
    )
    date: dt.date


class ConfidenceBreaker(Node):
    """Move a model's traffic to a backup when its answers' mean confidence falls (seed 004 §3.2)."""

    output: str = Field(
        min_length=1,
        max_length=256,
        description="the output field carrying the confidence, e.g. pred_confidence",
    )
    min_mean: Fraction = Field(0.7, description="trip below this mean confidence (seed 004 §3.2: 0.7)")
    window_s: Annotated[float, Field(gt=0, le=86_400)] = Field(60, description="the mean's window")
    fallback: Annotated[Id, RefTo("stage")] = Field(description="the backup model's stage")
    metric: str | None = Field(
        None,
        pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$",
        description="a Prometheus histogram or summary of the output's values (its `_sum` and `_count`); "
        "the generated rules alert when its mean over `window_s` falls below `min_mean`",
    )
    labels: dict[str, str] = Field(default_factory=dict, description="label matchers of `metric`")


class GpuJob(Node):
    """A batch or offline job that runs on a service's GPUs beside its online models (seed 004 §4.4)."""

    id: Annotated[Id, IdOf("job")]
    service: Annotated[Id, RefTo("service")] = Field(description="the service whose GPUs the job's tasks use")
    schedule: str | None = Field(None, max_length=128, description="when it runs, e.g. 'nightly 01:00'")
    max_concurrency: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None, description="tasks on the GPU at once (seed 004 §4.4: a semaphore of 3); unset is uncapped"
    )
    gpu_memory_gb: Annotated[float, Field(gt=0, le=4096)] | None = Field(
        None, description="GPU memory one task holds"
    )
    gpu_ms_per_task: Ms | None = Field(None, description="GPU time one task takes")
    gpu_duty_cycle: Annotated[float, Field(gt=0, le=1)] = Field(
        1.0,
        description="share of a running task's time it keeps its GPU busy (the rest is reading and "
        "decoding); the cap × this is the GPUs the job takes from the online stages while it runs",
    )
