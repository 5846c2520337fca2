"""YAML in and out (``application/yaml``), with the C loader when PyYAML has it."""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from typing import IO, TYPE_CHECKING, Any

import yaml
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer

from .decoding import MAX_DEPTH, DecodeError, check_depth, load_json, read_limited
from .yaml_aliases import check_aliases

if TYPE_CHECKING:  # a base class must be static for the type checker: both have one API
    _BaseLoader = yaml.SafeLoader
else:
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_MERGE = "tag:yaml.org,2002:merge"


def _key_identity(node: yaml.Node) -> Any:
    return (node.tag, node.value) if isinstance(node, yaml.ScalarNode) else id(node)


class Loader(_BaseLoader):
    """YAML read as Kubernetes reads it: as JSON, so an unquoted date stays a string, and
    strictly: a key given twice in one mapping is an error, not last-wins; and bounded: a
    document whose aliases expand too far is refused before it is built (``yaml_aliases``)."""

    def construct_document(self, node: yaml.Node) -> Any:
        check_aliases(node)
        return super().construct_document(node)

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Merge keys (``<<``) as YAML defines them: the mapping's own keys win, then each
        merged mapping over the ones after it. (PyYAML 6.0.4 tells merged keys apart by the
        identity of their strings, so which of two merged mappings wins varies.)"""
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        own: list[tuple[yaml.Node, yaml.Node]] = []
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE:
                own.append((key_node, value_node))
                continue
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping or list of mappings for merging, found {source.id}",
                        source.start_mark,
                    )
                self.flatten_mapping(source)
                for pair in source.value:
                    if (identity := _key_identity(pair[0])) not in seen:
                        seen.add(identity)
                        merged.append(pair)
        if merged:
            node.value = merged + own

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:  # merged keys are overridden, not duplicated
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # an unhashable key: the base class says so
                    break
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f'duplicate field "{key}"', key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
# Characters a literal block keeps verbatim: printable text, tabs and "\n" line breaks
# ("\r", NEL and the Unicode separators would be read back as "\n"; other controls need
# escapes, so such a string stays double-quoted).
_BLOCK_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


class _LiteralEmitter(yaml.emitter.Emitter):
    """PyYAML's emitter, but a multi-line string with tabs or trailing spaces may still be a
    literal block (YAML keeps both verbatim there; PyYAML refuses them to be safe)."""

    def analyze_scalar(self, scalar: str) -> Any:
        analysis = super().analyze_scalar(scalar)
        if "\x85" in scalar:
            # PyYAML writes NEL raw in a single-quoted or plain scalar, where a reader folds
            # it to a space: only double quotes (it escapes it as \N) keep it
            analysis.allow_flow_plain = analysis.allow_block_plain = False
            analysis.allow_single_quoted = analysis.allow_block = False
            return analysis
        if "\n" in scalar and not _BLOCK_UNSAFE.search(scalar):
            analysis.allow_block = True
        return analysis

    def determine_block_hints(self, text: str) -> str:
        hints = super().determine_block_hints(text)
        if text[:1] == "\t" and not hints[:1].isdigit():  # a leading tab is content, say so
            hints = str(self.best_indent) + hints
        return hints


class Dumper(_LiteralEmitter, yaml.SafeDumper):
    """YAML as people read and edit it: a multi-line string (a script) is a literal block
    (``|``), kept only when it reads back as the same string, byte for byte (else the
    default, double-quoted with escapes). SafeDumper's own ``__init__`` sets every part up;
    only its emitter's two decisions above differ."""


def _literal_round_trips(text: str) -> bool:
    try:
        written = yaml.dump({"k": _Literal(text)}, Dumper=Dumper, allow_unicode=True)
        return bool(yaml.load(written, Loader=Loader) == {"k": text})
    except yaml.YAMLError:
        return False


class _Literal(str):
    """A string asked to be a literal block (the round-trip check's own dump)."""


def _represent_str(dumper: Dumper, text: str) -> yaml.ScalarNode:
    if "\n" in text and (isinstance(text, _Literal) or _literal_round_trips(text)):
        return dumper.represent_scalar("tag:yaml.org,2002:str", str(text), style="|")
    return dumper.represent_str(str(text))


Dumper.add_representer(str, _represent_str)
Dumper.add_representer(_Literal, _represent_str)


def load_one(text: str | bytes) -> Any:
    documents = load_all(text)
    if len(documents) > 1:
        raise ValueError("expected one YAML document, got several")
    return documents[0] if documents else None


def load_all(text: str | bytes) -> list[Any]:
    """Every non-empty document of a multi-document stream (duplicate keys and nesting past
    ``decoding.MAX_DEPTH`` are errors)."""
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=Loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"YAML parse error: {exc}") from None
    except RecursionError:
        raise DecodeError(f"the body is nested deeper than {MAX_DEPTH} levels") from None
    for document in documents:
        check_depth(document)
    return documents


def dump(data: Any) -> str:
    return yaml.dump(
        data, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def dump_all(documents: list[Any]) -> str:
    return yaml.dump_all(
        documents, Dumper=Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


class StrictJSONParser(BaseParser):
    """JSON with a bounded body and nesting, and no duplicate keys."""

    media_type = "application/json"

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:  # any JSON value (DRF's stubs say a mapping)
        data = read_limited(stream, parser_context)
        try:
            return load_json(data) if data else None
        except DecodeError as exc:
            raise ParseError(str(exc)) from None


class YAMLParser(BaseParser):
    media_type = "application/yaml"

    def parse(
        self,
        stream: IO[Any] | None,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:  # any YAML document
        try:
            documents = load_all(read_limited(stream, parser_context))
        except ValueError as exc:
            raise ParseError(str(exc)) from None
        if len(documents) > 1:
            raise ParseError("a request body holds one object; got several YAML documents")
        return documents[0] if documents else None


class ApplyPatchParser(YAMLParser):
    """A server-side apply body: YAML (JSON is YAML too)."""

    media_type = "application/apply-patch+yaml"


class MergePatchParser(StrictJSONParser):
    media_type = "application/merge-patch+json"


class JSONPatchParser(StrictJSONParser):
    media_type = "application/json-patch+json"


class StrategicMergePatchParser(StrictJSONParser):
    """Read only for the kinds that declare strategic merge strategies (the view refuses the
    others with kube-apiserver's 415 before reading the body)."""

    media_type = "application/strategic-merge-patch+json"


class YAMLRenderer(BaseRenderer):
    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if data is None:
            return b""
        return dump(data).encode("utf-8")
