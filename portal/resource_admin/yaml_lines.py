"""Where a field is in a YAML text: the line a write error's cause names, for showing the
error next to it (``spec.env[1].name`` -> the line of that key; a missing field -> the line of
the nearest object that holds it)."""

from __future__ import annotations

from typing import Any

import yaml
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from portal.machinery.serializers import _path_keys
from portal.machinery.yaml import Loader

CONTEXT_LINES = 2


def _child(node: Any, key: Any) -> Any | None:
    """(the key node, or the item) for ``key`` of a mapping or index of a sequence."""
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return key_node, value_node
        # a bracketed map key (``data[a.b]``): the map's key inside the brackets
        name, _, rest = key.partition("[")
        if rest.endswith("]"):
            found = _child(node, name)
            return _child(found[1], rest[:-1]) if found else None
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        item = node.value[key]
        return item, item
    return None


def field_line(text: str, path: str) -> int | None:
    """The 1-based line holding ``path`` (or its nearest present parent) in ``text``."""
    try:
        node = yaml.compose(text, Loader=Loader)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = None
    for key in _path_keys(path):
        found = _child(node, key)
        if found is None:
            break
        marker, node = found
        line = marker.start_mark.line + 1
    return line


def excerpt(text: str, line: int, message: str) -> SafeString:
    """The lines around ``line`` (numbered), the message next to ``line``."""
    lines = text.splitlines()
    first, last = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    rows = [
        (
            "k-error-line" if number == line else "",
            number,
            lines[number - 1],
            f"  \u25c0 {message}" if number == line else "",
        )
        for number in range(first, last + 1)
    ]
    return format_html(
        '<pre class="k-yaml-excerpt">{}</pre>',
        format_html_join(
            "\n",
            '<span class="{}"><span class="k-muted">{:>4} </span>{}<strong>{}</strong></span>',
            rows,
        ),
    )
