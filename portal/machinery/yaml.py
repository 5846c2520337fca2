"""YAML in and out (``application/yaml``), with the C loader when PyYAML has it."""

from __future__ import annotations

from typing import Any

import yaml
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser
from rest_framework.renderers import BaseRenderer

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_BaseLoader):
    """YAML read as Kubernetes reads it: as JSON, so an unquoted date stays a string."""


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load_one(text: str | bytes) -> Any:
    try:
        return yaml.load(text, Loader=Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise ValueError(f"YAML parse error: {exc}") from None


def load_all(text: str | bytes) -> list[Any]:
    """Every non-empty document of a multi-document stream."""
    try:
        return [doc for doc in yaml.load_all(text, Loader=Loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise ValueError(f"YAML parse error: {exc}") from None


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True)


def dump_all(documents: list[Any]) -> str:
    return yaml.dump_all(documents, Dumper=Dumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True)


class YAMLParser(BaseParser):
    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            documents = load_all(stream.read())
        except ValueError as exc:
            raise ParseError(str(exc)) from None
        if len(documents) > 1:
            raise ParseError("a request body holds one object; got several YAML documents")
        return documents[0] if documents else None


class MergePatchParser(JSONParser):
    media_type = "application/merge-patch+json"


class YAMLRenderer(BaseRenderer):
    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dump(data).encode("utf-8")
