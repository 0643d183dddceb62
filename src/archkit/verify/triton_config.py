"""Triton model configuration checks: backend, batching, queue, instances, version policy (VT220-VT239)."""

from __future__ import annotations

from archkit.spec.model import ModelInfo
from archkit.spec.serving import TritonBackend, backend_of
from archkit.verify.findings import Recorder
from archkit.verify.registry import Check, Code


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
        rec.expect(
            self.code,
            label,
            b,
            have == b.max_batch_size,
            ok=f"max_batch_size {have}",
            drift=f"model '{name}' has max_batch_size {have}, the spec declares {b.max_batch_size}: the "
            "latency budget was computed for the declared batch (seed 000 §2.1)",
            field="max_batch_size",
        )


class DynamicBatching(ConfigCheck):
    """dynamic_batching is on, with the declared queue delay, preferred sizes and queue bound."""

    code = Code(
        "VT226",
        "dynamic batching on",
        "The spec declares batching; Triton must have dynamic_batching enabled.",
        "Triton model configuration (dynamic_batching)",
    )
    max_queue_delay = Code(
        "VT221",
        "max_queue_delay",
        "dynamic_batching max_queue_delay_microseconds bounds the wait to fill a batch.",
        "seed 000 §2.1–2.2",
    )
    preferred_batch_sizes = Code(
        "VT222",
        "preferred batch sizes",
        "dynamic_batching preferred_batch_size as declared.",
        "Triton model configuration (dynamic_batching)",
    )
    max_queue_size = Code(
        "VT224",
        "max queue size",
        "A bounded queue refuses work beyond it instead of timing out.",
        "Triton model configuration (default_queue_policy)",
    )
    also = (
        max_queue_delay,
        preferred_batch_sizes,
        max_queue_size,
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        b, name = model.batching, model.name
        if b is None:
            return
        dyn = config.get("dynamic_batching")
        if dyn is None:
            rec.drift(
                self.code,
                label,
                b,
                f"model '{name}' has no dynamic_batching; the spec declares batching up to "
                f"{b.max_batch_size} with a {b.max_queue_delay_us} µs queue delay",
            )
        else:
            delay = int(dyn.get("max_queue_delay_microseconds", 0) or 0)
            rec.expect(
                self.max_queue_delay,
                label,
                b,
                delay == b.max_queue_delay_us,
                ok=f"max_queue_delay_microseconds {delay}",
                drift=f"model '{name}' waits up to {delay} µs to fill a batch "
                f"(max_queue_delay_microseconds), the spec declares {b.max_queue_delay_us} µs "
                "(seed 000 §2.1: the queue delay adds to every request's latency)",
                field="max_queue_delay_us",
            )
            if b.preferred_batch_sizes or "preferred_batch_sizes" in b.model_fields_set:
                pref = sorted(int(x) for x in dyn.get("preferred_batch_size") or [])
                rec.expect(
                    self.preferred_batch_sizes,
                    label,
                    b,
                    pref == sorted(b.preferred_batch_sizes),
                    ok=f"preferred_batch_size {pref}",
                    drift=f"model '{name}' prefers batches {pref or 'none'}, the spec declares "
                    f"{sorted(b.preferred_batch_sizes)}",
                    field="preferred_batch_sizes",
                )
            if b.max_queue_size is not None:
                qs = _queue_policy(dyn, "max_queue_size")
                have_q = f"queues up to {qs} request(s)" if qs else "has an unbounded queue"
                rec.expect(
                    self.max_queue_size,
                    label,
                    b,
                    qs == b.max_queue_size,
                    ok=f"max_queue_size {qs}",
                    drift=f"model '{name}' {have_q}, the spec declares max_queue_size {b.max_queue_size}",
                    field="max_queue_size",
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
            rec.expect(
                self.code,
                label,
                b,
                qt == b.queue_timeout_us,
                ok=f"default_timeout_microseconds {qt}",
                drift=f"model '{name}' lets a request wait {f'{qt} µs' if qt else 'without limit'} in its queue, "
                f"the spec declares queue_timeout_us {b.queue_timeout_us}",
                field="queue_timeout_us",
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
        rec.expect(
            self.code,
            label,
            model,
            count == model.instances,
            ok=f"{count} instance(s)",
            drift=f"model '{name}' runs {count} instance(s), the spec declares {model.instances}",
            field="instances",
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
                self.code,
                label,
                model,
                f"model '{name}' runs instances on the GPU (KIND_GPU), the spec declares device cpu: each "
                "takes a CUDA context (seed 000 §5.8: CPU models belong on KIND_CPU)",
                field="device",
            )
        elif model.device.value == "gpu" and "KIND_GPU" not in kinds and "KIND_AUTO" not in kinds:
            # not drift: a GPU model is run on CPU by the CPU environments of the same spec (the
            # local reference service, CI); the note keeps it visible
            rec.ok(
                self.code,
                label,
                model,
                f"instances {', '.join(kinds)}: this server runs the model on CPU (spec device: gpu)",
                field="device",
            )
        else:
            rec.ok(self.code, label, model, f"instances {', '.join(kinds)}", field="device")


class VersionPolicyKept(ConfigCheck):
    """The versions kept loaded as declared."""

    code = Code("VT225", "version policy", "Which versions stay loaded (latest 2).", "seed 000 §2.2")

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        name = model.name
        vp = model.version_policy
        if vp is not None and vp.latest_num_versions is not None:
            have = ((config.get("version_policy") or {}).get("latest") or {}).get("num_versions")
            rec.expect(
                self.code,
                label,
                vp,
                have is not None and int(have) == vp.latest_num_versions,
                ok=f"latest {have} versions",
                drift=f"model '{name}' keeps {'latest ' + str(have) if have else 'a different set of'} version(s), "
                f"the spec declares the latest {vp.latest_num_versions} (seed 000 §2.2)",
                field="latest_num_versions",
            )


# Triton's older `platform` names, which a config may give instead of `backend` (Triton model
# configuration, "Platform and backend").
_PLATFORM_BACKEND = {
    "onnxruntime_onnx": TritonBackend.onnxruntime.value,
    "pytorch_libtorch": TritonBackend.pytorch.value,
    "tensorrt_plan": TritonBackend.tensorrt.value,
    "tensorflow_savedmodel": TritonBackend.tensorflow.value,
    "tensorflow_graphdef": TritonBackend.tensorflow.value,
}


class ServingBackend(ConfigCheck):
    """The backend that runs the model as declared (else the format's default)."""

    code = Code(
        "VT239",
        "serving backend",
        "The backend Triton runs the model with (config `backend`, or its `platform`) is the spec's "
        "`model.backend`, else its format's default: the measured service times belong to that runtime.",
        "Triton model configuration (backend)",
    )

    def run(self, rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
        want = backend_of(model.format, model.backend)
        if want is None:
            return
        raw = str(config.get("backend") or "")
        platform = str(config.get("platform") or "")
        have = raw or _PLATFORM_BACKEND.get(platform, platform)
        declared = "declares" if model.backend is not None else f"implies (format {model.format.value})"
        if not have:
            rec.unknown(
                self.code,
                label,
                model,
                f"model '{model.name}' names no backend or platform; the spec {declared} {want.value}",
                field="backend",
            )
            return
        rec.expect(
            self.code,
            label,
            model,
            have == want.value,
            ok=f"backend {have}",
            drift=f"model '{model.name}' runs on the {have} backend, the spec {declared} {want.value}: its "
            "service times and batching were measured on that runtime",
            field="backend",
        )


# In the order their findings appear for one model.
CONFIG_CHECKS: tuple[type[ConfigCheck], ...] = (
    ServingBackend,
    MaxBatchSize,
    DynamicBatching,
    QueueTimeout,
    InstanceCount,
    InstanceKind,
    VersionPolicyKept,
)


def check_config(rec: Recorder, label: str, model: ModelInfo, config: dict) -> None:
    for chk in CONFIG_CHECKS:
        chk().run(rec, label, model, config)
