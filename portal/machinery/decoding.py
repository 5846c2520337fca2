"""Strict request decoding, as the Kubernetes API server decodes: a bounded body, bounded
nesting, and no duplicate keys (JSON or YAML), each a 4xx Status instead of a crash or a
silent last-key-wins.

The parsers here serve every API view; ``load_json``/``load_yaml`` serve the CLI too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError

from . import errors

MAX_DEPTH = 100  # objects and arrays nested in one another; manifests need far fewer
DEFAULT_MAX_REQUEST_BYTES = 3 * 1024 * 1024  # the Kubernetes API server's limit


class DecodeError(ValueError):
    """The body is not acceptable input; the message says why."""


def max_request_bytes() -> int:
    return int(getattr(settings, "KRUNTIMES_MAX_REQUEST_BYTES", DEFAULT_MAX_REQUEST_BYTES))


def too_large(limit: int) -> errors.StatusError:
    return errors.StatusError(
        413, "RequestEntityTooLarge", f"the request body is larger than the limit of {limit} bytes"
    )


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself, or DecodeError when containers nest deeper than ``limit``."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            raise DecodeError(f"the body is nested deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)
    return value


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DecodeError(f'duplicate field "{key}"')
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise DecodeError(f"JSON parse error - {name} is not a JSON number")


def load_json(text: str | bytes) -> Any:
    try:
        value = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
    except RecursionError:
        raise DecodeError(f"the body is nested deeper than {MAX_DEPTH} levels") from None
    except DecodeError:
        raise
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"JSON parse error - {exc}") from None
    return check_depth(value)


def read_limited(stream: Any, parser_context: Mapping[str, Any] | None) -> bytes:
    """The request body, refused with 413 past the limit (by Content-Length, or by reading
    one byte more than the limit when the length is not declared)."""
    limit = max_request_bytes()
    request = (parser_context or {}).get("request")
    declared = (getattr(request, "META", None) or {}).get("CONTENT_LENGTH") if request else None
    try:
        if declared and int(declared) > limit:
            raise too_large(limit)
    except ValueError:
        raise ParseError("the Content-Length header is not a number") from None
    data = stream.read(limit + 1) if stream is not None else b""
    if len(data) > limit:
        raise too_large(limit)
    return data
