"""References declared in the model: `IdOf` marks an object's id, `RefTo` a field that names one.

    id: Annotated[Id, IdOf("stage")]                 # unique among stages
    service: Annotated[Id, RefTo("service")] | None  # must name a service
    inputs: list[Annotated[Id, RefTo("gate or event")]]

One walker (`refs_of`) reads these markers from the model classes and indexes a spec: the
objects of every namespace in document order (duplicates included, for AK102), the first
object per id (the lookups `Spec.stage()` etc.), and every reference with where it is (AK103).
A new section that marks its fields gets all three without an edit anywhere else.

Namespaces are named as messages name them ("stage", "node pool", "control-flow node"). An
`IdOf(..., scope=NS)` namespace is unique only inside the nearest enclosing object of
namespace NS (a fault tree's gates and events), and references to it resolve there too.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import BaseModel


@dataclass(frozen=True, init=False)
class RefTo:
    """Marks a field (or the items of a list field) as the id of an object of one of `namespaces`."""

    namespaces: tuple[str, ...]
    label: str  # how a message names what it must be, e.g. "stage or service"

    def __init__(self, *namespaces: str, label: str | None = None):
        if not namespaces:
            raise ValueError("RefTo needs at least one namespace")
        object.__setattr__(self, "namespaces", tuple(namespaces))
        words = list(namespaces)
        default = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
        object.__setattr__(self, "label", label or default)


@dataclass(frozen=True)
class IdOf:
    """Marks an object's `id` field: unique in `namespace` (within the nearest `scope` object).

    `also` names further namespaces the object can be referred to by, without a uniqueness
    check of their own (a call is a control-flow node, and also a call).
    """

    namespace: str
    scope: str | None = None
    also: tuple[str, ...] = ()


def _markers(annotation: Any, metadata: list[Any]) -> tuple[list[Any], bool]:
    """The IdOf/RefTo markers of a field and whether they apply to the items of a list."""
    found = [m for m in metadata if isinstance(m, (IdOf, RefTo))]
    many = False

    def visit(tp: Any, in_list: bool) -> None:
        nonlocal many
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            marks = [m for m in tp.__metadata__ if isinstance(m, (IdOf, RefTo))]
            if marks:
                found.extend(marks)
                many = many or in_list
            visit(typing.get_args(tp)[0], in_list)
        elif origin in (typing.Union, types.UnionType):
            for arg in typing.get_args(tp):
                visit(arg, in_list)
        elif origin is list:
            visit(typing.get_args(tp)[0], True)

    visit(annotation, False)
    return found, many


def _may_hold_models(annotation: Any) -> bool:
    """Whether values of this annotation can contain models (so the walk must descend)."""
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_may_hold_models(a) for a in typing.get_args(annotation))


@dataclass(frozen=True)
class ClassRefs:
    """What the walker needs of one model class: its id marker, reference fields, child fields."""

    id_of: IdOf | None
    refs: tuple[tuple[str, str, RefTo, bool], ...]  # (attribute, document key, marker, many)
    children: tuple[str, ...]


@cache
def class_refs(cls: type[BaseModel]) -> ClassRefs:
    id_of: IdOf | None = None
    refs: list[tuple[str, str, RefTo, bool]] = []
    children: list[str] = []
    for name, finfo in cls.model_fields.items():
        marks, many = _markers(finfo.annotation, list(finfo.metadata))
        for m in marks:
            if isinstance(m, IdOf):
                id_of = m
            else:
                refs.append((name, finfo.alias or name, m, many))
        if _may_hold_models(finfo.annotation):
            children.append(name)
    return ClassRefs(id_of, tuple(refs), tuple(children))


def _model_classes(root: type[BaseModel]) -> Iterator[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [root]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        yield cls
        for finfo in cls.model_fields.values():
            stack = [finfo.annotation]
            while stack:
                tp = stack.pop()
                if isinstance(tp, type) and issubclass(tp, BaseModel):
                    todo.append(tp)
                stack.extend(typing.get_args(tp))


@cache
def scoped_namespaces(root: type[BaseModel]) -> dict[str, str]:
    """namespace -> the namespace of the objects it is scoped by, for every scoped namespace."""
    out: dict[str, str] = {}
    for cls in _model_classes(root):
        id_of = class_refs(cls).id_of
        if id_of is not None and id_of.scope:
            out[id_of.namespace] = id_of.scope
            for extra in id_of.also:
                out[extra] = id_of.scope
    return out


def declared_namespaces(root: type[BaseModel]) -> set[str]:
    """Every namespace whose ids must be unique, as the model classes reachable from `root` mark them."""
    return {info.id_of.namespace for info in map(class_refs, _model_classes(root)) if info.id_of}


def reference_fields(root: type[BaseModel]) -> list[tuple[type[BaseModel], str, RefTo]]:
    """(class, document key, marker) of every reference field reachable from `root`."""
    return [
        (cls, key, marker)
        for cls in sorted(_model_classes(root), key=lambda c: c.__name__)
        for _, key, marker, _ in class_refs(cls).refs
    ]


Scope = tuple[str, int] | None  # (namespace of the scoping object, its identity) or None: global


@dataclass(frozen=True)
class Reference:
    """One id named by a reference field, where it is, and the scope it resolves in."""

    obj: Any
    key: str
    index: int | None
    value: str
    to: RefTo
    scopes: tuple[Scope, ...]  # one per namespace of `to`

    @property
    def path(self) -> tuple[Any, ...]:
        path = tuple(getattr(self.obj, "spec_path", ())) + (self.key,)
        return path if self.index is None else path + (self.index,)


@dataclass
class RefIndex:
    """A spec's ids and references: derived from the model's markers by one walk."""

    members: dict[tuple[str, Scope], list[Any]] = field(default_factory=dict)
    scope_objects: dict[tuple[str, int], Any] = field(default_factory=dict)
    references: list[Reference] = field(default_factory=list)
    unique: set[tuple[str, Scope]] = field(default_factory=set)
    _first: dict[tuple[str, Scope], dict[str, Any]] = field(default_factory=dict)

    def first(self, namespace: str, scope: Scope = None) -> dict[str, Any]:
        """id -> the first object with that id in a namespace (duplicates are AK102's business)."""
        key = (namespace, scope)
        if key not in self._first:
            out: dict[str, Any] = {}
            for obj in self.members.get(key, []):
                out.setdefault(obj.id, obj)
            self._first[key] = out
        return self._first[key]

    def namespaces(self) -> Iterator[tuple[str, list[Any]]]:
        """(label, members in document order) of every namespace whose ids must be unique."""
        for key, objs in self.members.items():
            if key not in self.unique:
                continue
            namespace, scope = key
            if scope is None:
                yield namespace, objs
            else:
                owner = self.scope_objects[scope]
                yield f"{namespace} of {scope[0]} '{owner.id}'", objs

    def known(self, ref: Reference) -> set[str]:
        """The ids a reference may name."""
        ids: set[str] = set()
        for ns, scope in zip(ref.to.namespaces, ref.scopes, strict=True):
            ids.update(self.first(ns, scope))
        return ids

    def dangling(self) -> Iterator[tuple[Reference, set[str]]]:
        """Each reference that names no object, with the ids it could have named."""
        for ref in self.references:
            if not any(
                ref.value in self.first(ns, scope)
                for ns, scope in zip(ref.to.namespaces, ref.scopes, strict=True)
            ):
                yield ref, self.known(ref)


def build(root: BaseModel) -> RefIndex:
    """Walk a model tree once, in document order, indexing ids and references by the markers."""
    scoped = scoped_namespaces(type(root))
    index = RefIndex()

    def visit(node: Any, scopes: dict[str, Scope]) -> None:
        if isinstance(node, BaseModel):
            info = class_refs(type(node))
            id_of = info.id_of
            if id_of is not None and isinstance(getattr(node, "id", None), str):
                scope = scopes.get(id_of.scope) if id_of.scope else None
                index.members.setdefault((id_of.namespace, scope), []).append(node)
                index.unique.add((id_of.namespace, scope))
                for extra in id_of.also:
                    index.members.setdefault((extra, scope), []).append(node)
                if id_of.namespace in scoped.values():  # it opens a scope for what it holds
                    scopes = {**scopes, id_of.namespace: (id_of.namespace, id(node))}
                    index.scope_objects[(id_of.namespace, id(node))] = node
            for name, key, marker, many in info.refs:
                value = getattr(node, name)
                ref_scopes = tuple(
                    scopes.get(scoped[ns]) if ns in scoped else None for ns in marker.namespaces
                )
                values = list(enumerate(value)) if many and isinstance(value, list) else [(None, value)]
                for i, v in values:
                    if isinstance(v, str):
                        index.references.append(Reference(node, key, i, v, marker, ref_scopes))
            for name in info.children:
                visit(getattr(node, name), scopes)
        elif isinstance(node, list):
            for item in node:
                visit(item, scopes)
        elif isinstance(node, dict):
            for item in node.values():
                visit(item, scopes)

    visit(root, {})
    return index


def refs_of(root: BaseModel) -> RefIndex:
    """The reference index of a spec, built once and kept on it (a copy with overrides builds its own)."""
    cache_ = root.__dict__.setdefault("_archkit_index", {})
    if "refs" not in cache_:
        cache_["refs"] = build(root)
    index: RefIndex = cache_["refs"]
    return index
