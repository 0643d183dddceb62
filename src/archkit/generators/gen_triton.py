"""The `triton` generator: one Triton `config.pbtxt` per model stage the spec serves with Triton.

The files form a model repository (`triton/<model>/config.pbtxt`; the model files go in
`<model>/<version>/`). Every field comes from the stage's `model`: the backend (declared, else the
format's default: archkit.spec.serving), `max_batch_size`, dynamic batching (preferred sizes, queue
delay, the queue policy's bound and timeout), the instance group (count and kind from `device`),
the version policy (seed 000 §2.2) and, where a load-test scenario declares the model's inputs, a
zero-data warm-up request so the first real request does not pay the cold start (seed 000 §3.4). `archkit verify --triton-repo`
parses these files with Triton's own `ModelConfig` message and runs the same checks as against a
live server (`archkit.verify.triton_config`), so a generated file that drifts is a bug.
"""

from __future__ import annotations

import json
import re

from archkit.generators.registry import RenderContext, register
from archkit.spec.model import ModelInfo, Scenario, Spec, Stage
from archkit.spec.serving import backend_of

# The load-test's datatype names (KServe v2: BOOL, UINT8, ..., BYTES) as Triton's DataType enum.
_DATATYPE = {
    "BOOL": "TYPE_BOOL",
    "UINT8": "TYPE_UINT8",
    "UINT16": "TYPE_UINT16",
    "UINT32": "TYPE_UINT32",
    "UINT64": "TYPE_UINT64",
    "INT8": "TYPE_INT8",
    "INT16": "TYPE_INT16",
    "INT32": "TYPE_INT32",
    "INT64": "TYPE_INT64",
    "FP16": "TYPE_FP16",
    "FP32": "TYPE_FP32",
    "FP64": "TYPE_FP64",
    "BF16": "TYPE_BF16",
    "BYTES": "TYPE_STRING",
}


def triton_stages(spec: Spec) -> list[tuple[Stage, ModelInfo]]:
    """Model stages served by Triton (`model.server: triton`), the ones `verify --triton-url` checks."""
    return [
        (st, st.model)
        for st in spec.dataflow.stages
        if st.model is not None and (st.model.server or "").lower() == "triton"
    ]


def _q(value: str) -> str:
    """A protobuf text-format string literal (JSON's escapes are a subset protobuf accepts)."""
    return json.dumps(value, ensure_ascii=True)


def _where(node: Stage | ModelInfo) -> str:
    path = node.spec_path
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<spec>"


def _warmup(model: ModelInfo, scenarios: list[Scenario]) -> list[str]:
    """A zero-data warm-up sample per load-test scenario that declares this model's inputs."""
    lines: list[str] = []
    samples = [s for s in scenarios if s.model == model.name and s.inputs]
    if not samples:
        return lines
    lines.append("model_warmup [")
    batched = model.batching is not None
    for i, sc in enumerate(samples):
        lines += ["  {", f"    name: {_q('warmup-' + sc.id)}", "    batch_size: 1"]
        for inp in sc.inputs:
            # a batching model's shapes carry the batch first: Triton's warm-up dims leave it out;
            # a variable dimension (-1) is warmed at 1
            dims = inp.shape[1:] if batched and inp.shape else inp.shape
            dims_text = ", ".join(str(d if d > 0 else 1) for d in dims)
            lines += [
                "    inputs {",
                f"      key: {_q(inp.name)}",
                "      value {",
                f"        data_type: {_DATATYPE.get(inp.datatype.upper(), 'TYPE_STRING')}",
                f"        dims: [ {dims_text} ]",
                "        zero_data: true",
                "      }",
                "    }",
            ]
        lines.append("  }," if i < len(samples) - 1 else "  }")
    lines.append("]")
    return lines


def config_pbtxt(ctx: RenderContext, stage: Stage, model: ModelInfo) -> str:
    """The text of one model's config.pbtxt (protobuf text format of Triton's ModelConfig)."""
    lines = [ctx.header("#"), f"# from stage '{stage.id}', {_where(model)}"]
    lines.append(f"name: {_q(model.name)}")
    backend = backend_of(model.format, model.backend)
    if backend is None:
        lines.append(f"# format '{model.format.value}': no Triton backend known; set `backend` by hand")
    else:
        lines.append(f"backend: {_q(backend.value)}")
    b = model.batching
    lines.append(f"max_batch_size: {b.max_batch_size if b is not None else 0}")
    if b is not None:
        lines += ["dynamic_batching {"]
        if b.preferred_batch_sizes:
            lines.append(f"  preferred_batch_size: [ {', '.join(str(n) for n in b.preferred_batch_sizes)} ]")
        lines.append(f"  max_queue_delay_microseconds: {b.max_queue_delay_us}")
        if b.max_queue_size is not None or b.queue_timeout_us is not None:
            lines.append("  default_queue_policy {")
            if b.queue_timeout_us is not None:
                # REJECT: a request that waited its timeout is refused, not run late (seed 000 §2.2)
                lines += [
                    "    timeout_action: REJECT",
                    f"    default_timeout_microseconds: {b.queue_timeout_us}",
                ]
            if b.max_queue_size is not None:
                lines.append(f"    max_queue_size: {b.max_queue_size}")
            lines.append("  }")
        lines.append("}")
    kind = "KIND_GPU" if model.device.value == "gpu" else "KIND_CPU"
    lines += ["instance_group [", "  {", f"    count: {model.instances}", f"    kind: {kind}", "  }", "]"]
    vp = model.version_policy
    if vp is not None and vp.latest_num_versions is not None:
        lines.append(f"version_policy: {{ latest {{ num_versions: {vp.latest_num_versions} }} }}")
    elif vp is not None and vp.specific:
        versions = ", ".join(str(v) for v in vp.specific)
        lines.append(f"version_policy: {{ specific {{ versions: [ {versions} ] }} }}")
    scenarios = ctx.spec.loadtest.scenarios if ctx.spec.loadtest is not None else []
    lines += _warmup(model, scenarios)
    return "\n".join(lines) + "\n"


def model_dir(name: str) -> str:
    """The repository folder of a model (Triton requires it to be the model's name); a name that is
    not a plain file name has its other characters replaced, so it can never leave the folder."""
    safe = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return "_" + safe if safe.startswith(".") or not safe else safe


@register(
    "triton",
    order=65,
    source="seed 000 §2.1 (dynamic batcher, 1 ms queue delay), §2.2 (version policy), §5.8 (CPU instance groups)",
)
def generate(ctx: RenderContext) -> dict[str, str]:
    """Triton model repository: a config.pbtxt per model stage served by Triton."""
    return {
        f"triton/{model_dir(model.name)}/config.pbtxt": config_pbtxt(ctx, stage, model)
        for stage, model in triton_stages(ctx.spec)
    }
