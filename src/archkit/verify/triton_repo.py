"""The Triton model-repository source: `config.pbtxt` files on disk, checked before they are deployed.

Each file is parsed with Triton's own `ModelConfig` protobuf message (from `tritonclient`, the
`load` extra): a field Triton does not know, a wrong type or a syntax error is reported with the
file's line, as Triton itself would refuse the model. The parsed message becomes the JSON form
Triton's HTTP API returns for `/v2/models/NAME/config`, and the same checks run on it as on a live
server (`archkit.verify.triton_config`, codes VT220-VT228): `archkit render`'s `triton/` folder and
a hand-written repository are held to the spec alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archkit.atomic import file_sha256
from archkit.errors import InputError
from archkit.spec.model import ModelInfo, Spec
from archkit.verify.findings import Finding, Recorder
from archkit.verify.registry import Check, Code, DocRow, Option, Providers, Reading, Source, register_source
from archkit.verify.state import StateError
from archkit.verify.triton import ModelLoaded, triton_models
from archkit.verify.triton_config import MaxBatchSize, check_config

AREA = "triton"  # the same checks as the live Triton source, reported under its area


class ConfigFileError(InputError, ValueError):
    """A config.pbtxt that Triton's ModelConfig message does not accept."""


class ModelFileHash(Check):
    """The model file Triton will serve from the repository has the SHA-256 the spec pins."""

    code = Code(
        "VT229",
        "served model hash",
        "A file in the version folder Triton serves (the spec's version when it names a folder, else those "
        "its version policy keeps; Triton's default is the latest one) has the spec's model.sha256. Seed 004 §4.1 "
        "checks the SHA-256 before loading; a repository without version folders (render's configs only) "
        "is not judged.",
        "seed 004 §4.1 (CI downloads the version and checks its SHA-256 before loading); seed 000 §2.2",
    )


def served_versions(model: ModelInfo, numbers: list[int]) -> list[int]:
    """The version folders Triton serves: the spec's numeric version, else its version policy's
    (`specific`, or the highest `latest_num_versions`, Triton's default being the latest one)."""
    if model.version and model.version.isdigit() and int(model.version) in numbers:
        return [int(model.version)]
    policy = model.version_policy
    if policy is not None and policy.specific:
        return [n for n in numbers if n in policy.specific]
    latest = policy.latest_num_versions if policy is not None and policy.latest_num_versions else 1
    return sorted(numbers)[-latest:]


def check_model_files(rec: Recorder, label: str, model: ModelInfo, folder: Path) -> None:
    """VT229: compare the served version folders' files with `model.sha256`."""
    if not model.sha256:
        return
    dirs = {int(d.name): d for d in folder.iterdir() if d.is_dir() and d.name.isdigit()}
    if not dirs:
        return  # configs only: nothing served from here to hash
    hashes = {
        n: {f.relative_to(folder).as_posix(): file_sha256(f) for f in sorted(d.rglob("*")) if f.is_file()}
        for n, d in sorted(dirs.items())
    }
    served = served_versions(model, list(dirs))
    where = str(dirs[served[0]]) if served else str(folder)
    hit = [name for n in served for name, digest in hashes[n].items() if digest == model.sha256]
    if hit:
        rec.ok(
            ModelFileHash.code, label, model, f"{hit[0]} has the pinned sha256", field="sha256", where=where
        )
        return
    elsewhere = [name for files in hashes.values() for name, d in files.items() if d == model.sha256]
    found = ", ".join(f"{name} {d[:12]}…" for n in served for name, d in hashes[n].items()) or "no file"
    shown = ", ".join(str(n) for n in served) or "none"
    message = (
        f"model '{model.name}': Triton serves version {shown}, whose files do not have the pinned sha256 "
        f"{model.sha256[:12]}… ({found})"
    )
    if elsewhere:
        message += f"; the pinned file is {elsewhere[0]}, a version Triton does not serve"
    rec.drift(ModelFileHash.code, label, model, message, field="sha256", where=where)


def parse_config(path: Path) -> dict[str, Any]:
    """A config.pbtxt as the dict Triton's HTTP API returns (proto field names, enums as names).

    Raises ConfigFileError naming the file and line when the text is not a valid ModelConfig.
    """
    try:
        from google.protobuf import json_format, text_format
        from tritonclient.grpc import model_config_pb2
    except ImportError as exc:  # pragma: no cover - the load extra is part of dev
        raise StateError(
            f"reading config.pbtxt needs tritonclient (pip install 'archkit[load]'): {exc}"
        ) from None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path}: cannot read: {exc}") from None
    msg = model_config_pb2.ModelConfig()
    try:
        text_format.Parse(text, msg)
    except text_format.ParseError as exc:
        raise ConfigFileError(f"{path}:{exc}") from None
    data: dict[str, Any] = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    return data


def read_repository(root: Path) -> dict[str, tuple[Path, dict[str, Any] | str]]:
    """model name -> (file, parsed config or the parse error) for every `*/config.pbtxt` under root."""
    if not root.is_dir():
        raise StateError(f"{root}: not a folder (give a Triton model repository: MODEL/config.pbtxt)")
    out: dict[str, tuple[Path, dict[str, Any] | str]] = {}
    for path in sorted(root.glob("*/config.pbtxt")):
        try:
            config = parse_config(path)
        except ConfigFileError as exc:
            out[path.parent.name] = (path, str(exc))
            continue
        out[str(config.get("name") or path.parent.name)] = (path, config)
    return out


def check_repository(spec: Spec, root: Path) -> list[Finding]:
    """Each Triton model stage has a config in the repository that matches the spec."""
    rec = Recorder(spec, AREA)
    repo = read_repository(root)
    for stage, model in triton_models(spec):
        label = f"model {model.name}"
        found = repo.get(model.name)
        if found is None:
            rec.drift(
                ModelLoaded.code,
                label,
                model,
                f"model '{model.name}' (stage '{stage.id}') has no config.pbtxt in {root}",
                field="name",
            )
            continue
        path, config = found
        if isinstance(config, str):
            rec.drift(
                MaxBatchSize.code,
                label,
                model,
                f"Triton would refuse the config: {config}",
                field="batching",
                where=str(path),
            )
            continue
        rec.ok(ModelLoaded.code, label, model, f"{path.relative_to(root)}", field="name", where=str(path))
        before = len(rec.findings)
        check_config(rec, label, model, config)
        for f in rec.findings[before:]:
            f.where = str(path)
        check_model_files(rec, label, model, path.parent)
    return rec.findings


@register_source
class TritonRepoSource(Source):
    """A Triton model repository on disk (`MODEL/config.pbtxt`), e.g. what `archkit render` wrote."""

    name = "triton-repo"
    title = "Triton model repository"
    prefix = "VT"
    options = (
        Option(
            "triton_repo",
            "Folder of Triton model configurations (MODEL/config.pbtxt), e.g. render's triton/: checks before deploy.",
            metavar="DIR",
        ),
    )
    docs = (
        DocRow(
            "`--triton-repo DIR`",
            "`MODEL/config.pbtxt` files, parsed with Triton's `ModelConfig` message (tritonclient)",
            "the config checks of the Triton source (VT220-VT228) per model stage with `model.server: triton`; "
            "a missing file is VT210, a file Triton would refuse is VT220 with its line; where the model "
            "folder holds version folders (`MODEL/1/model.onnx`), the served file's SHA-256 (VT229).",
        ),
    )
    checks = (ModelFileHash,)

    def read(self, spec: Spec, options: Mapping[str, Any], timeout_s: float, providers: Providers) -> Any:
        return Path(options["triton_repo"])

    def check(self, spec: Spec, given: Any, timeout_s: float) -> Reading:
        return Reading({"area": AREA, "source": str(given)}, check_repository(spec, given))
