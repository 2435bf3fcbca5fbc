"""YAML read as PyYAML's safe loader reads it, faster: the grader reads tens of small documents per log (job
protocols, pods' HiveD annotations, configs), where PyYAML's Python constructor and resolver cost more than libyaml's
parser.

`safe_load(text)` composes the document with the safe loader (libyaml's where PyYAML has it), resolving plain scalars
through a table made once per process, then builds a plain document (maps, lists and scalars of the standard tags,
no aliases, no merge keys) directly; any other document is built by PyYAML's own safe constructor from the same
nodes. Either way the data, and the error a bad document raises, are `yaml.load(text, Loader=YAML_LOADER)`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hivedlab.basics.files import YAML_LOADER

_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
# the safe constructor's own function for each scalar tag a plain document holds (str is the scalar's text)
_SCALARS: dict[str, Callable[[Any, ScalarNode], Any]] = {
    f"tag:yaml.org,2002:{name}": YAML_LOADER.yaml_constructors[f"tag:yaml.org,2002:{name}"]
    for name in ("null", "bool", "int", "float", "timestamp", "binary")}
_IMPLICIT: dict[str | None, list[tuple[str, Any]]] = YAML_LOADER.yaml_implicit_resolvers
# Resolver.resolve's candidates for a plain scalar by its first character ("" for an empty scalar), wildcards last
_WILDCARD = list(_IMPLICIT.get(None, []))
_BY_FIRST = {first: list(found) + _WILDCARD for first, found in _IMPLICIT.items() if first is not None}


class _Unusual(Exception):
    """The document is not a plain one: PyYAML's constructor builds it."""


class _Loader(YAML_LOADER):  # type: ignore[valid-type,misc]  # YAML_LOADER is one of two loader classes
    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """Resolver.resolve without its per-call list building; the same tag (the safe loader has no path
        resolvers; a loader given some resolves as PyYAML does)."""
        if kind is ScalarNode and not self.yaml_path_resolvers:
            if implicit[0]:
                for tag, pattern in _BY_FIRST.get(value[:1], _WILDCARD):
                    if pattern.match(value):
                        return tag
            return str(self.DEFAULT_SCALAR_TAG)
        return str(super().resolve(kind, value, implicit))


def _scalar(loader: Any, node: Node) -> Any:
    if type(node) is not ScalarNode:
        raise _Unusual
    if node.tag == _STR:
        return node.value
    make = _SCALARS.get(node.tag)
    if make is None:
        raise _Unusual
    return make(loader, node)


def _build(loader: Any, node: Node, seen: set[int]) -> Any:
    """A plain document's data, as SafeConstructor builds it; `_Unusual` for anything else."""
    if type(node) is ScalarNode:
        return _scalar(loader, node)
    if id(node) in seen:  # an alias: the same object twice, which only PyYAML's constructor keeps
        raise _Unusual
    seen.add(id(node))
    if type(node) is MappingNode and node.tag == _MAP:
        return {_scalar(loader, key): _build(loader, value, seen) for key, value in node.value}
    if type(node) is SequenceNode and node.tag == _SEQ:
        return [_build(loader, item, seen) for item in node.value]
    raise _Unusual


def safe_load(text: str) -> Any:
    """`yaml.load(text, Loader=YAML_LOADER)`: the same data, the same `yaml.YAMLError` for a bad document."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _build(loader, node, set())
        except (_Unusual, RecursionError):  # nested deeper than _build recurses: PyYAML's constructor does not recurse
            return loader.construct_document(node)
    finally:
        loader.dispose()

