"""The meta.k8s.io/v1 definitions every group-version document refers to."""

from __future__ import annotations

from ..serializers import ObjectMetaSerializer
from .fields import Schema, serializer_schema
from .kinds import LIST_META, META_PREFIX, OBJECT_META

STATUS = f"{META_PREFIX}.Status"
DELETE_OPTIONS = f"{META_PREFIX}.DeleteOptions"
PATCH = f"{META_PREFIX}.Patch"

_STRING: Schema = {"type": "string"}


def _string(description: str) -> Schema:
    return {"type": "string", "description": description}


_CAUSE: Schema = {
    "type": "object",
    "description": "One field's problem: the JSON path, a reason and a message.",
    "properties": {
        "field": _string("The JSON path of the field at fault, such as spec.mode.task."),
        "reason": _string("What is wrong, such as FieldValueRequired or FieldValueInvalid."),
        "message": _string("A human-readable account of the problem."),
    },
}


MANAGED_FIELDS_ENTRY: Schema = {
    "type": "object",
    "description": "The fields one manager owns, by one kind of write (server-side apply).",
    "properties": {
        "manager": {"type": "string", "description": "Who wrote: the fieldManager."},
        "operation": {
            "type": "string",
            "enum": ["Apply", "Update"],
            "description": "Apply for a server-side apply; Update for any other write.",
        },
        "apiVersion": {"type": "string", "description": "The version the fields are named in."},
        "time": {
            "type": "string",
            "format": "date-time",
            "description": "When this manager last changed what it owns.",
        },
        "fieldsType": {
            "type": "string",
            "enum": ["FieldsV1"],
            "description": "The encoding of fieldsV1; FieldsV1 is the only one.",
        },
        "fieldsV1": {
            "type": "object",
            "description": "The owned fields, in structured-merge-diff's f:/k:/v: encoding.",
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "subresource": {"type": "string", "description": "Set for a write to a subresource."},
    },
}


def _mark_apply_lists(properties: dict[str, Schema]) -> None:
    """The list types of ObjectMeta as Kubernetes declares them, for server-side apply."""
    properties["ownerReferences"].update(
        {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"]}
    )
    properties["finalizers"]["x-kubernetes-list-type"] = "set"
    properties["managedFields"] = {
        "type": "array",
        "description": "Which manager owns which fields (server-side apply); the server keeps it.",
        "items": MANAGED_FIELDS_ENTRY,
        "x-kubernetes-list-type": "atomic",
    }


def meta_definitions() -> dict[str, Schema]:
    object_meta = serializer_schema(ObjectMetaSerializer())
    object_meta["description"] = (
        "ObjectMeta is metadata that all persisted resources must have: a name (and namespace "
        "for namespaced kinds), labels, annotations; the server sets uid, resourceVersion, "
        "generation and the timestamps."
    )
    _mark_apply_lists(object_meta["properties"])
    return {
        OBJECT_META: object_meta,
        LIST_META: {
            "type": "object",
            "description": "ListMeta describes metadata that synthetic resources must have.",
            "properties": {
                "continue": {
                    "type": "string",
                    "description": "Set when more items are available: pass it as ?continue=.",
                },
                "resourceVersion": _string(
                    "The version of the collection the list was read at; watch from it."
                ),
                "remainingItemCount": {
                    "type": "integer",
                    "format": "int64",
                    "description": "How many more items a paged list has after this page.",
                },
            },
        },
        STATUS: {
            "type": "object",
            "description": "Status is a return value for calls that do not return other objects.",
            "properties": {
                "apiVersion": _string("v1."),
                "kind": _string("Status."),
                "metadata": {
                    "allOf": [{"$ref": f"#/components/schemas/{LIST_META}"}],
                    "description": "Standard list metadata.",
                },
                "status": {"type": "string", "description": "Success or Failure."},
                "message": _string("A human-readable description of the outcome."),
                "reason": _string(
                    "A CamelCase word for why the call failed, such as NotFound or Invalid."
                ),
                "code": {
                    "type": "integer",
                    "format": "int32",
                    "description": "The HTTP status code of the answer.",
                },
                "details": {
                    "type": "object",
                    "description": "The object the outcome concerns, and each field at fault.",
                    "properties": {
                        "name": _string("The object's name."),
                        "group": _string("The object's API group."),
                        "kind": _string("The object's kind (its resource, for some errors)."),
                        "uid": _string("The object's uid."),
                        "causes": {
                            "type": "array",
                            "items": _CAUSE,
                            "description": "Every problem found, each naming its field.",
                        },
                    },
                },
            },
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}],
        },
        DELETE_OPTIONS: {
            "type": "object",
            "description": "DeleteOptions may be provided when deleting an API object: in the "
            "body (the query string is then not read) or, without a body, as query parameters.",
            "properties": {
                "apiVersion": {
                    **_STRING,
                    "description": "v1, meta.k8s.io/v1, meta.k8s.io/v1beta1 or the version "
                    "of the kind being deleted; may be omitted.",
                },
                "kind": {**_STRING, "description": "DeleteOptions; may be omitted."},
                "dryRun": {
                    "type": "array",
                    "items": _STRING,
                    "description": "All: check and admit the delete, and answer with the object "
                    "as it would be left (deletionTimestamp set while finalizers remain), "
                    "but change nothing.",
                },
                "gracePeriodSeconds": {
                    "type": "integer",
                    "format": "int64",
                    "description": "Accepted for compatibility; the kinds served here have no "
                    "graceful deletion, so the delete is immediate once no finalizer remains.",
                },
                "propagationPolicy": {
                    "type": "string",
                    "enum": ["Background", "Foreground", "Orphan"],
                    "description": "What happens to the dependents (objects whose "
                    "ownerReferences name this one): deleted after it (Background, the "
                    "default), before it (Foreground), or kept with the reference removed "
                    "(Orphan).",
                },
                "orphanDependents": {
                    "type": "boolean",
                    "description": "Deprecated: true is propagationPolicy Orphan, false "
                    "Background; not together with propagationPolicy.",
                },
                "preconditions": {
                    "type": "object",
                    "description": "The delete happens only if the object still has this "
                    "uid and resourceVersion; otherwise 409 Conflict.",
                    "properties": {
                        "uid": {**_STRING, "description": "The object's metadata.uid."},
                        "resourceVersion": {
                            **_STRING,
                            "description": "The object's metadata.resourceVersion.",
                        },
                    },
                },
            },
            "x-kubernetes-group-version-kind": [
                {"group": "meta.k8s.io", "version": "v1", "kind": "DeleteOptions"}
            ],
        },
        PATCH: {
            "type": "object",
            "description": "A JSON merge patch (RFC 7386) of the object.",
        },
    }
