"""The operations of each kind, shaped as kube-apiserver publishes them: kubectl finds a kind's
PATCH by its ``x-kubernetes-group-version-kind`` and, seeing ``fieldValidation`` there, leaves
field validation to the server."""

from __future__ import annotations

from typing import Any

from ..registry import ResourceKind
from .fields import Schema
from .kinds import definition_name, gvk, ref
from .meta import DELETE_OPTIONS, PATCH, STATUS

JSON_TYPES = ("application/json", "application/yaml")
PATCH_TYPES = ("application/merge-patch+json", "application/json-patch+json")
Operation = dict[str, Any]


def _query(name: str, description: str, schema: Schema | None = None) -> Schema:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _path(name: str, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string"},
    }


LIST_PARAMETERS = [
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("fieldSelector", "metadata.name and metadata.namespace, with = or ==."),
    _query("limit", "The most items to return.", {"type": "integer"}),
    _query("continue", "The continue token of the previous page."),
    _query(
        "watch",
        "Stream ADDED/MODIFIED/DELETED/BOOKMARK/ERROR events, one JSON object a line.",
        {"type": "boolean"},
    ),
    _query(
        "resourceVersion",
        "With watch: the changes after this version (410 Expired when older than the history "
        "kept); without it a watch starts with the current state.",
    ),
    _query("allowWatchBookmarks", "With watch: BOOKMARK events.", {"type": "boolean"}),
    _query(
        "sendInitialEvents",
        "With watch: the current state first, ended by a BOOKMARK annotated "
        "k8s.io/initial-events-end.",
        {"type": "boolean"},
    ),
    _query("resourceVersionMatch", "NotOlderThan (with sendInitialEvents)."),
    _query("timeoutSeconds", "With watch: end the stream after this long.", {"type": "integer"}),
]
DRY_RUN = _query("dryRun", "All: validate and admit, but do not persist.", {"type": "string"})
FIELD_VALIDATION = _query(
    "fieldValidation",
    "Strict, Warn or Ignore; this server always refuses unknown and duplicate fields (Strict).",
)
WRITE_PARAMETERS = [DRY_RUN, FIELD_VALIDATION]
PROPAGATION = _query(
    "propagationPolicy",
    "Background, Foreground or Orphan: what happens to dependents (read only without a body).",
    {"type": "string", "enum": ["Background", "Foreground", "Orphan"]},
)
GRACE_PERIOD = _query(
    "gracePeriodSeconds",
    "Accepted for compatibility; deletion is immediate (read only without a body).",
    {"type": "integer"},
)
ORPHAN_DEPENDENTS = _query(
    "orphanDependents",
    "Deprecated: true is propagationPolicy=Orphan (read only without a body).",
    {"type": "boolean"},
)
DELETE_PARAMETERS = [DRY_RUN, PROPAGATION, GRACE_PERIOD, ORPHAN_DEPENDENTS]


def _content(schema: Schema, types: tuple[str, ...] = JSON_TYPES) -> Schema:
    return {media: {"schema": schema} for media in types}


DELETE_BODY = {"content": _content(ref(DELETE_OPTIONS))}


def _ok(schema: Schema, code: str = "200") -> Schema:
    responses: Schema = {code: {"description": "OK", "content": _content(schema)}}
    responses["401"] = {"description": "Unauthorized"}
    return responses


def _operation_id(verb: str, kind: ResourceKind, scope: str, suffix: str = "") -> str:
    group = "".join(part.capitalize() for part in (kind.group or "core").split("."))
    return f"{verb}{group}{kind.version.capitalize()}{scope}{kind.kind}{suffix}"


def _op(kind: ResourceKind, action: str, op_id: str, responses: Schema, **extra: Any) -> Operation:
    return {
        "tags": [kind.api_version],
        "operationId": op_id,
        "description": f"{action} {kind.kind}",
        **extra,
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(kind),
    }


def _object_ops(kind: ResourceKind, scope: str, suffix: str = "") -> dict[str, Operation]:
    """get, replace and patch on an object (``suffix`` "Status": its status subresource)."""
    item = ref(definition_name(kind))
    body = {"required": True, "content": _content(item)}
    return {
        "get": _op(kind, "get", _operation_id("read", kind, scope, suffix), _ok(item)),
        "put": _op(
            kind,
            "put",
            _operation_id("replace", kind, scope, suffix),
            _ok(item),
            parameters=WRITE_PARAMETERS,
            requestBody=body,
        ),
        "patch": _op(
            kind,
            "patch",
            _operation_id("patch", kind, scope, suffix),
            _ok(item),
            parameters=WRITE_PARAMETERS,
            requestBody={"required": True, "content": _content(ref(PATCH), PATCH_TYPES)},
        ),
    }


def _subresource_ops(kind: ResourceKind, scope: str, name: str, verbs: tuple[str, ...]) -> Schema:
    suffix = name.capitalize()
    ops: Schema = {}
    if "get" in verbs:
        text = {"type": "string"}
        ops["get"] = _op(
            kind,
            "get",
            _operation_id("read", kind, scope, suffix),
            {"200": {"description": "OK", "content": {"text/plain": {"schema": text}}}},
        )
    if "create" in verbs:
        ops["post"] = _op(
            kind,
            "post",
            # "post", not "create": a Workflow's run must not take WorkflowRun's create
            _operation_id("post", kind, scope, suffix),
            {"201": {"description": "Created", "content": _content({"type": "object"})}},
            parameters=[DRY_RUN],
        )
    return ops


def kind_paths(kind: ResourceKind) -> dict[str, Schema]:
    """Every path the kind serves (``portal.machinery.routes.kind_urlpatterns``)."""
    base = f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"
    scope = "Namespaced" if kind.namespaced else ""
    collection = (
        f"{base}/namespaces/{{namespace}}/{kind.plural}"
        if kind.namespaced
        else f"{base}/{kind.plural}"
    )
    item, listing = ref(definition_name(kind)), ref(definition_name(kind, "List"))
    namespace = [_path("namespace", "object name and auth scope")] if kind.namespaced else []
    name = _path("name", f"name of the {kind.kind}")
    create_body = {"required": True, "content": _content(item)}
    paths: dict[str, Schema] = {
        collection: {
            "parameters": namespace,
            "get": _op(
                kind,
                "list",
                _operation_id("list", kind, scope),
                _ok(listing),
                parameters=LIST_PARAMETERS,
            ),
            "post": _op(
                kind,
                "post",
                _operation_id("create", kind, scope),
                _ok(item, "201"),
                parameters=WRITE_PARAMETERS,
                requestBody=create_body,
            ),
            "delete": _op(
                kind,
                "deletecollection",
                _operation_id("deletecollection", kind, scope),
                _ok(listing),
                parameters=[*LIST_PARAMETERS[:2], *DELETE_PARAMETERS],
                requestBody=DELETE_BODY,
            ),
        },
        f"{collection}/{{name}}": {
            "parameters": [name, *namespace],
            **_object_ops(kind, scope),
            "delete": _op(
                kind,
                "delete",
                _operation_id("delete", kind, scope),
                _ok(ref(STATUS)),
                parameters=DELETE_PARAMETERS,
                requestBody=DELETE_BODY,
            ),
        },
    }
    if kind.status_field:
        paths[f"{collection}/{{name}}/status"] = {
            "parameters": [name, *namespace],
            **_object_ops(kind, scope, "Status"),
        }
    for sub, verbs in sorted(kind.subresources.items()):
        paths[f"{collection}/{{name}}/{sub}"] = {
            "parameters": [name, *namespace],
            **_subresource_ops(kind, scope, sub, verbs),
        }
    if kind.namespaced:
        paths[f"{base}/{kind.plural}"] = {
            "get": _op(
                kind,
                "list",
                _operation_id("list", kind, "", "ForAllNamespaces"),
                _ok(listing),
                parameters=LIST_PARAMETERS,
            )
        }
    return paths
