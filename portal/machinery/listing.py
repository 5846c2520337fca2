"""Lists as the API serves them: one page in (namespace, name) order, filtered by
``labelSelector`` and ``fieldSelector``, with ``limit`` and ``continue``; ``consistent_list``
also gives the resourceVersion the page was read at, where a watch starts."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from . import errors, history
from .label_query import selector_q
from .labels import selector_parameter
from .registry import ResourceKind

MAX_LIMIT = 5000


def encode_continue(key: list[str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"v": 1, "after": key}).encode()).decode()


def decode_continue(token: str) -> list[str]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(token.encode()))
        after = payload["after"]
        if payload.get("v") != 1 or not isinstance(after, list):
            raise ValueError
        return [str(part) for part in after]
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise errors.bad_request(
            "invalid continue token", [errors.invalid("continue", "not a token this server issued")]
        ) from None


def consistent_list(
    kind: ResourceKind, namespace: str | None, params: Mapping[str, str]
) -> tuple[int, list[Any], str]:
    """(the resourceVersion, one page of the list) read at one moment, so a watch from that
    version misses and repeats nothing."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        version = history.current()
        items, token = list_objects(kind, namespace, params)
    return version, items, token


def list_objects(
    kind: ResourceKind, namespace: str | None, params: Mapping[str, str]
) -> tuple[list[Any], str]:
    """One page of a list in (namespace, name) order, filtered by ``labelSelector``."""
    selector = selector_parameter(params)
    field_filters = parse_field_selector(kind, params.get("fieldSelector", ""))
    limit = _parse_limit(params.get("limit"))
    query = kind.model.objects.filter(**field_filters)
    if not selector.is_empty:  # in the database, before paging (indexed on PostgreSQL)
        query = query.filter(selector_q(selector))
    order = ("namespace", "name") if kind.namespaced else ("name",)
    if namespace is not None and kind.namespaced:
        query = query.filter(namespace=namespace)
    query = query.order_by(*order)
    token = params.get("continue")
    if token:
        query = _after(query, kind, decode_continue(token))
    items: list[Any] = []
    chunk = max(min(limit or MAX_LIMIT, MAX_LIMIT), 50)
    while True:
        rows = list(query[:chunk])
        for obj in rows:
            if selector.matches(obj.labels):
                items.append(obj)
                if limit and len(items) == limit:
                    key = _key(kind, obj)
                    more = _after(query, kind, key).exists()
                    return items, encode_continue(key) if more else ""
        if len(rows) < chunk:
            return items, ""
        query = _after(query, kind, _key(kind, rows[-1]))


def _key(kind: ResourceKind, obj: Any) -> list[str]:
    return [obj.namespace, obj.name] if kind.namespaced else [obj.name]


def _after(query: QuerySet[Any], kind: ResourceKind, key: list[str]) -> QuerySet[Any]:
    from django.db.models import Q

    if kind.namespaced:
        if len(key) != 2:
            raise errors.bad_request("invalid continue token")
        return query.filter(Q(namespace__gt=key[0]) | Q(namespace=key[0], name__gt=key[1]))
    return query.filter(name__gt=key[-1])


def _parse_limit(value: str | None) -> int:
    if value is None or value == "":
        return 0
    try:
        limit = int(value)
        if limit < 0:
            raise ValueError
    except ValueError:
        raise errors.bad_request(
            f'invalid limit "{value}"', [errors.invalid("limit", "must be a non-negative integer")]
        ) from None
    return min(limit, MAX_LIMIT)


def parse_field_selector(kind: ResourceKind, text: str) -> dict[str, str]:
    """{model column: value} for a fieldSelector: metadata.name and metadata.namespace on
    every kind, and the labels the kind adds (``ResourceKind.field_selectors``)."""
    filters: dict[str, str] = {}
    labels = kind.selectable_fields()
    for term in filter(None, (t.strip() for t in text.split(","))):
        field, sep, value = term.partition("==") if "==" in term else term.partition("=")
        column = labels.get(field.strip())
        if not sep or column is None or field.strip().endswith("!"):
            raise errors.bad_request(
                f'field label not supported: "{field.strip()}"',
                [
                    errors.invalid(
                        "fieldSelector",
                        f'"{term}": only {", ".join(labels)} with = are supported',
                    )
                ],
            )
        filters[column] = value.strip()
    return filters
