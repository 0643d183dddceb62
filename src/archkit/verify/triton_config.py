"""Triton model configuration checks: batching, queue, instances, version policy (VT220-VT228)."""

from __future__ import annotations

from typing import Any

from archkit.spec.model import ModelInfo
from archkit.verify.findings import Recorder
from archkit.verify.registry import Check, Code


def expect(rec: Recorder, at: tuple[str, str, Any, str], same: bool, ok: str, drift: str) -> None:
    """Pass with `ok` when the server's value is the declared one, else drift with `drift`.

    `at` is (code, object label, spec node, field) as `Recorder.add` takes them.
    """
    code, label, node, fld = at
    if same:
        rec.ok(code, label, node, fld, ok)
    else:
        rec.drift(code, label, node, fld, drift)


def _queue_policy(dyn: dict, key: str) -> int:
    """A dynamic_batching default_queue_policy field; 0 (Triton's "no limit") when unset."""
    return int(((dyn.get("default_queue_policy") or {}).get(key, 0)) or 0)


class ConfigCheck(Check):
    """A check of one model's configuration as Triton reports it."""

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        raise NotImplementedError  # pragma: no cover - abstract


class MaxBatchSize(ConfigCheck):
    """max_batch_size as declared."""

    code = Code(
        "VT220", "max_batch_size", "The batch size the latency budget was computed for.", "seed 000 §2.1"
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        b, name = model.batching, model.name
        if b is None:
            return
        have = int(config.get("max_batch_size", 0) or 0)
        expect(
            rec,
            ("VT220", label, b, "max_batch_size"),
            have == b.max_batch_size,
            f"max_batch_size {have}",
            f"model '{name}' has max_batch_size {have}, the spec declares {b.max_batch_size}: the "
            "latency budget was computed for the declared batch (seed 000 §2.1)",
        )


class DynamicBatching(ConfigCheck):
    """dynamic_batching is on, with the declared queue delay, preferred sizes and queue bound."""

    code = Code(
        "VT226",
        "dynamic batching on",
        "The spec declares batching; Triton must have dynamic_batching enabled.",
        "Triton model configuration (dynamic_batching)",
    )
    also = (
        Code(
            "VT221",
            "max_queue_delay",
            "dynamic_batching max_queue_delay_microseconds bounds the wait to fill a batch.",
            "seed 000 §2.1–2.2",
        ),
        Code(
            "VT222",
            "preferred batch sizes",
            "dynamic_batching preferred_batch_size as declared.",
            "Triton model configuration (dynamic_batching)",
        ),
        Code(
            "VT224",
            "max queue size",
            "A bounded queue refuses work beyond it instead of timing out.",
            "Triton model configuration (default_queue_policy)",
        ),
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        b, name = model.batching, model.name
        if b is None:
            return
        dyn = config.get("dynamic_batching")
        if dyn is None:
            rec.drift(
                "VT226",
                label,
                b,
                None,
                f"model '{name}' has no dynamic_batching; the spec declares batching up to "
                f"{b.max_batch_size} with a {b.max_queue_delay_us} µs queue delay",
            )
        else:
            delay = int(dyn.get("max_queue_delay_microseconds", 0) or 0)
            expect(
                rec,
                ("VT221", label, b, "max_queue_delay_us"),
                delay == b.max_queue_delay_us,
                f"max_queue_delay_microseconds {delay}",
                f"model '{name}' waits up to {delay} µs to fill a batch "
                f"(max_queue_delay_microseconds), the spec declares {b.max_queue_delay_us} µs "
                "(seed 000 §2.1: the queue delay adds to every request's latency)",
            )
            if b.preferred_batch_sizes or "preferred_batch_sizes" in b.model_fields_set:
                pref = sorted(int(x) for x in dyn.get("preferred_batch_size") or [])
                expect(
                    rec,
                    ("VT222", label, b, "preferred_batch_sizes"),
                    pref == sorted(b.preferred_batch_sizes),
                    f"preferred_batch_size {pref}",
                    f"model '{name}' prefers batches {pref or 'none'}, the spec declares "
                    f"{sorted(b.preferred_batch_sizes)}",
                )
            if b.max_queue_size is not None:
                qs = _queue_policy(dyn, "max_queue_size")
                have_q = f"queues up to {qs} request(s)" if qs else "has an unbounded queue"
                expect(
                    rec,
                    ("VT224", label, b, "max_queue_size"),
                    qs == b.max_queue_size,
                    f"max_queue_size {qs}",
                    f"model '{name}' {have_q}, the spec declares max_queue_size {b.max_queue_size}",
                )


class QueueTimeout(ConfigCheck):
    """The queue timeout as declared."""

    code = Code(
        "VT228",
        "queue timeout",
        "dynamic_batching default_queue_policy default_timeout_microseconds: how long a request may "
        "wait in the queue before it is refused.",
        "Triton model configuration (default_queue_policy)",
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        b, name = model.batching, model.name
        if b is None:
            return
        dyn = config.get("dynamic_batching")
        if dyn is not None and b.queue_timeout_us is not None:
            qt = _queue_policy(dyn, "default_timeout_microseconds")
            expect(
                rec,
                ("VT228", label, b, "queue_timeout_us"),
                qt == b.queue_timeout_us,
                f"default_timeout_microseconds {qt}",
                f"model '{name}' lets a request wait {f'{qt} µs' if qt else 'without limit'} in its queue, "
                f"the spec declares queue_timeout_us {b.queue_timeout_us}",
            )


class InstanceCount(ConfigCheck):
    """The model instances as declared."""

    code = Code(
        "VT223",
        "instance count",
        "The model instances (instance_group count) as declared.",
        "Triton model configuration (instance_group)",
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        name = model.name
        groups = config.get("instance_group") or []
        if not groups:
            return
        count = sum(int(g.get("count", 1) or 1) for g in groups)
        expect(
            rec,
            ("VT223", label, model, "instances"),
            count == model.instances,
            f"{count} instance(s)",
            f"model '{name}' runs {count} instance(s), the spec declares {model.instances}",
        )


class InstanceKind(ConfigCheck):
    """A CPU model does not run on GPU instances."""

    code = Code(
        "VT227",
        "instance kind",
        "A model declared device: cpu must not run on KIND_GPU instances (CPU models on KIND_CPU take "
        "no CUDA context); a GPU model on CPU is noted, not drift.",
        "seed 000 §5.8",
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        name = model.name
        groups = config.get("instance_group") or []
        if not groups:
            return
        kinds = sorted({str(g.get("kind", "KIND_AUTO")) for g in groups})
        if model.device.value == "cpu" and "KIND_GPU" in kinds:
            rec.drift(
                "VT227",
                label,
                model,
                "device",
                f"model '{name}' runs instances on the GPU (KIND_GPU), the spec declares device cpu: each "
                "takes a CUDA context (seed 000 §5.8: CPU models belong on KIND_CPU)",
            )
        elif model.device.value == "gpu" and "KIND_GPU" not in kinds and "KIND_AUTO" not in kinds:
            # not drift: a GPU model is run on CPU by the CPU environments of the same spec (the
            # local reference service, CI); the note keeps it visible
            rec.ok(
                "VT227",
                label,
                model,
                "device",
                f"instances {', '.join(kinds)}: this server runs the model on CPU (spec device: gpu)",
            )
        else:
            rec.ok("VT227", label, model, "device", f"instances {', '.join(kinds)}")


class VersionPolicyKept(ConfigCheck):
    """The versions kept loaded as declared."""

    code = Code("VT225", "version policy", "Which versions stay loaded (latest 2).", "seed 000 §2.2")

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        name = model.name
        vp = model.version_policy
        if vp is not None and vp.latest_num_versions is not None:
            have = ((config.get("version_policy") or {}).get("latest") or {}).get("num_versions")
            expect(
                rec,
                ("VT225", label, vp, "latest_num_versions"),
                have is not None and int(have) == vp.latest_num_versions,
                f"latest {have} versions",
                f"model '{name}' keeps {'latest ' + str(have) if have else 'a different set of'} version(s), "
                f"the spec declares the latest {vp.latest_num_versions} (seed 000 §2.2)",
            )


# In the order their findings appear for one model.
CONFIG_CHECKS: tuple[type[ConfigCheck], ...] = (
    MaxBatchSize,
    DynamicBatching,
    QueueTimeout,
    InstanceCount,
    InstanceKind,
    VersionPolicyKept,
)


def _check_config(rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
    for chk in CONFIG_CHECKS:
        chk().run(rec, label, model, config)
