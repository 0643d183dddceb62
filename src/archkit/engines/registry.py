"""The engine-adapter registry: built-in adapters plus the `archkit.engines` entry point group."""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import entry_points

from archkit.engines.base import EngineAdapter, Metric, UnknownEngineError
from archkit.errors import ArchkitError

ENTRY_POINT_GROUP = "archkit.engines"
# Built-in adapters: module paths, imported on first use so that `archkit` starts fast.
BUILTIN: tuple[str, ...] = (
    "archkit.engines.triton",
    "archkit.engines.vllm",
    "archkit.engines.sglang",
    "archkit.engines.tgi",
    "archkit.engines.tensorrt_llm",
)

_ADAPTERS: dict[str, EngineAdapter] = {}
_loaded = False


def register(adapter: EngineAdapter) -> EngineAdapter:
    """Add an adapter; a second adapter with the same name is refused."""
    if adapter.name in _ADAPTERS and _ADAPTERS[adapter.name] is not adapter:
        raise ArchkitError(f"engine adapter {adapter.name!r} is registered twice")
    _ADAPTERS[adapter.name] = adapter
    return adapter


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN:
        import_module(module)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        value = ep.load()
        if not isinstance(value, EngineAdapter):
            raise ArchkitError(f"entry point {ep.name!r} in {ENTRY_POINT_GROUP} is not an EngineAdapter")
        register(value)


def adapter(name: str) -> EngineAdapter:
    """The adapter registered under `name`."""
    _load()
    try:
        return _ADAPTERS[name]
    except KeyError:
        raise UnknownEngineError(f"unknown engine {name!r}; known: {', '.join(names())}") from None


def names() -> list[str]:
    """Registered engine names, sorted."""
    _load()
    return sorted(_ADAPTERS)


def series(name: str) -> Metric | None:
    """The series named `name` in any registered engine (the first adapter by name), or None: how a
    planner learns what a spec's metric reference counts without guessing from its name."""
    _load()
    for key in sorted(_ADAPTERS):
        found = _ADAPTERS[key].series(name)
        if found is not None:
            return found
    return None
