"""Reading the manifests named by ``-f``: files, directories (``-R``) and stdin."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portal.machinery.registry import registry
from portal.machinery.yaml import load_all

from .errors import CLIError

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
STDIN_SOURCE = "STDIN"  # how kubectl names stdin in messages


@dataclass
class Document:
    source: str  # the file it came from, or "STDIN"
    manifest: Any


def _source_files(source: str, recursive: bool) -> list[Path]:
    path = Path(source)
    if path.is_dir():
        candidates = path.rglob("*") if recursive else path.iterdir()
        return sorted(
            (p for p in candidates if p.is_file() and p.suffix in MANIFEST_SUFFIXES),
            key=lambda p: p.as_posix(),
        )
    return [path]


def _json_stream(text: str) -> list[Any]:
    """One or more concatenated JSON values (kubectl accepts a JSON stream)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return values
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)


def parse_manifests(text: str) -> list[Any]:
    """Every non-empty document of a YAML stream or a JSON stream (raises ValueError)."""
    if text.lstrip().startswith(("{", "[")):
        try:
            return [value for value in _json_stream(text) if value is not None]
        except ValueError:
            pass  # YAML is a superset of most JSON: let its parser report the problem
    return load_all(text)


def expand_lists(manifest: Any) -> Iterator[Any]:
    """``kind: List`` (or any ``...List`` with ``items``) yields its items."""
    if isinstance(manifest, dict) and isinstance(manifest.get("items"), list):
        kind_name = manifest.get("kind")
        if (
            isinstance(kind_name, str)
            and kind_name.endswith("List")
            and registry.for_manifest(str(manifest.get("apiVersion") or ""), kind_name) is None
        ):
            for item in manifest["items"]:
                yield from expand_lists(item)
            return
    yield manifest


def _inputs(sources: list[str], recursive: bool) -> Iterator[tuple[str, str | None]]:
    """(name, text) per input; text is None for a file still to read. Stdin is read once."""
    stdin_text: str | None = None
    for source in sources:
        if source == STDIN:
            if stdin_text is None:
                stdin_text = sys.stdin.read()
            yield STDIN_SOURCE, stdin_text
        else:
            for path in _source_files(source, recursive):
                yield str(path), None


def read_documents(
    sources: Iterable[str], recursive: bool = False
) -> tuple[list[Document], list[str]]:
    """The manifests named by ``-f`` (files, directories, ``-``): (documents, error lines).

    A path that does not exist fails the whole command before anything is read, as kubectl.
    """
    sources = list(sources)
    for source in sources:
        if source != STDIN and not Path(source).exists():
            raise CLIError.client(f'the path "{source}" does not exist')
    documents: list[Document] = []
    problems: list[str] = []
    for name, text in _inputs(sources, recursive):
        try:
            text = text if text is not None else Path(name).read_text(encoding="utf-8")
            parsed = parse_manifests(text)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"error: error parsing {name}: {exc}")
            continue
        documents += [Document(name, item) for value in parsed for item in expand_lists(value)]
    return documents, problems


def is_namespace(manifest: Any) -> bool:
    return (
        isinstance(manifest, dict)
        and manifest.get("apiVersion") == "v1"
        and manifest.get("kind") == "Namespace"
    )


def namespaces_first(documents: list[Document]) -> list[Document]:
    return sorted(documents, key=lambda doc: not is_namespace(doc.manifest))
