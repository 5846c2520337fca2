"""v1 Event and events.k8s.io/v1 Event: one row, two shapes.

Controllers write Events through ``portal.events_recorder``; the API serves them like any
kind (get, list, watch, and fieldSelector on ``involvedObject.*`` so ``kubectl describe``
finds an object's Events). events.k8s.io/v1 reads the same rows in its shape (``regarding``,
``note``, ``deprecatedCount`` ...), as kube-apiserver serves one storage under both groups.

Every writer's path bounds what an Event holds: a message of at most ``MAX_MESSAGE_LENGTH``
characters (kube's ``NoteLengthLimit``), a reason of at most 128.
"""

from __future__ import annotations

from typing import Any

from portal.machinery import errors
from portal.machinery.conditions import parse_time
from portal.machinery.errors import FieldError
from portal.machinery.manifest import object_meta
from portal.machinery.printing import age_text
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.serializers import (
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)

EVENTS_GROUP = "events.k8s.io"
NORMAL, WARNING = "Normal", "Warning"
EVENT_TYPES = (NORMAL, WARNING)
MAX_MESSAGE_LENGTH = 1024  # k8s.io/kubernetes/pkg/apis/core/validation NoteLengthLimit
MAX_REASON_LENGTH = 128
MAX_COMPONENT_LENGTH = 128
TIME_FIELDS = ("firstTimestamp", "lastTimestamp", "eventTime")
# fieldSelector labels (kube's core Event ToSelectableFields) -> the indexed column
INVOLVED_SELECTORS = {
    "involvedObject.kind": "involved_kind",
    "involvedObject.name": "involved_name",
    "involvedObject.namespace": "involved_namespace",
    "involvedObject.uid": "involved_uid",
    "reason": "reason",
    "type": "type",
    "reportingComponent": "reporting_component",
}
# events.k8s.io/v1's labels for the same fields (its field label conversion)
REGARDING_SELECTORS = {
    "regarding.kind": "involved_kind",
    "regarding.name": "involved_name",
    "regarding.namespace": "involved_namespace",
    "regarding.uid": "involved_uid",
    "reason": "reason",
    "type": "type",
    "reportingController": "reporting_component",
}


def _text(**kwargs: Any) -> StrictCharField:
    return StrictCharField(required=False, allow_blank=True, **kwargs)


def _time(**kwargs: Any) -> StrictCharField:
    # never "": Go's metav1.Time refuses to decode an empty string
    return StrictCharField(required=False, allow_null=True, **kwargs)


class ObjectReferenceSerializer(StrictSerializer):
    """ObjectReference names an object: the one the event is about (involvedObject, regarding) or
    a second object involved (related)."""

    apiVersion = _text(help_text="The object's API version, such as kruntimes.io/v1alpha1.")
    kind = _text(help_text="The object's kind, such as Run.")
    name = _text(help_text="The object's name.")
    namespace = _text(help_text="The object's namespace; empty for cluster-scoped objects.")
    uid = _text(help_text="The object's uid.")
    resourceVersion = _text(help_text="The object's resourceVersion when the event was recorded.")
    fieldPath = _text(
        help_text="A part of the object the event is about, such as spec.containers{runtime}."
    )


class EventSourceSerializer(StrictSerializer):
    """EventSource names the component (and host) that reported an event."""

    component = _text(help_text="The component that reported the event.")
    host = _text(help_text="The host the reporting component runs on.")


class EventSeriesSerializer(StrictSerializer):
    """EventSeries tells of an event that keeps happening: how often and when last."""

    count = StrictIntegerField(
        help_text="How many times the event has occurred in this series.",
        required=False,
        min_value=0,
    )
    lastObservedTime = _time(help_text="When the event was last observed.")


CORE_BODY = {
    "involvedObject": ObjectReferenceSerializer,
    "reason": _text(
        default="",
        help_text="A short CamelCase word saying why the event happened, such as Scheduled or Failed.",
    ),
    "message": _text(default="", help_text="A human-readable description of what happened."),
    "type": _text(default="", help_text="Normal or Warning."),
    "count": StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="How many times the event has occurred.",
    ),
    "firstTimestamp": _time(help_text="When the event was first recorded."),
    "lastTimestamp": _time(help_text="When the event most recently occurred."),
    "source": EventSourceSerializer,
    "reportingComponent": _text(
        default="",
        help_text="The controller that emitted the event, such as kruntimes.io/scheduler.",
    ),
    "reportingInstance": _text(
        default="", help_text="The instance of that controller that emitted the event."
    ),
    "action": _text(
        default="", help_text="What was done, or failed, about the object, such as Binding."
    ),
    "eventTime": _time(help_text="When the event was first observed, in microseconds."),
    "series": EventSeriesSerializer,
    "related": ObjectReferenceSerializer,
}


def drop_empty_references(body: dict[str, Any], old: Any) -> dict[str, Any]:
    """An absent ``series`` or ``related`` stays absent (not ``{}``: a series of count 0)."""
    return {**body, **{key: None for key in ("series", "related") if not body.get(key)}}


def _time_causes(manifest: dict[str, Any]) -> list[FieldError]:
    causes = []
    for field in TIME_FIELDS:
        value = manifest.get(field)
        if value in (None, ""):
            continue
        try:
            parse_time(value)
        except ValueError:
            causes.append(errors.invalid(field, "must be an RFC 3339 time"))
    last_observed = (manifest.get("series") or {}).get("lastObservedTime")
    if last_observed not in (None, ""):
        try:
            parse_time(last_observed)
        except ValueError:
            causes.append(errors.invalid("series.lastObservedTime", "must be an RFC 3339 time"))
    return causes


def validate_event(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """kube's ValidateEvent, with the note bound on every write (not only events.k8s.io's)."""
    causes = _time_causes(new)
    namespace = (new.get("metadata") or {}).get("namespace") or ""
    involved = new.get("involvedObject") or {}
    if involved.get("namespace") and involved["namespace"] != namespace:
        causes.append(errors.invalid("involvedObject.namespace", "does not match event.namespace"))
    if new.get("type") not in ("", None, *EVENT_TYPES):
        causes.append(errors.not_supported("type", new.get("type"), EVENT_TYPES))
    for field, limit in (
        ("message", MAX_MESSAGE_LENGTH),
        ("reason", MAX_REASON_LENGTH),
        ("reportingComponent", MAX_COMPONENT_LENGTH),
        ("reportingInstance", MAX_COMPONENT_LENGTH),
        ("action", MAX_COMPONENT_LENGTH),
    ):
        if len(new.get(field) or "") > limit:
            causes.append(errors.too_long(field, limit))
    return causes


def involved_cell(event: Any) -> str:
    """kubectl's OBJECT column: ``run/name``."""
    return f"{event.involved_kind.lower()}/{event.involved_name}"


def last_seen_cell(event: Any) -> str:
    return age_text(event.last_seen)


COLUMNS = (
    Column("LAST SEEN", last_seen_cell, description="lastTimestamp (or eventTime)"),
    Column("TYPE", lambda e: e.type, description="type"),
    Column("REASON", lambda e: e.reason, description="reason"),
    Column("OBJECT", involved_cell, description="involvedObject"),
    Column("COUNT", lambda e: e.count, wide=True, description="count"),
    Column("SOURCE", lambda e: (e.source or {}).get("component"), wide=True),
    Column("MESSAGE", lambda e: e.message, description="message"),
)


def events_v1_manifest(kind: ResourceKind, event: Any) -> dict[str, Any]:
    """A row in events.k8s.io/v1's shape (kube's v1 <-> events.k8s.io conversion)."""
    manifest: dict[str, Any] = {
        "apiVersion": kind.api_version,
        "kind": kind.kind,
        "metadata": object_meta(kind, event),
        "eventTime": event.event_time or event.first_timestamp,
        "reportingController": event.reporting_component
        or (event.source or {}).get("component", ""),
        "reportingInstance": event.reporting_instance,
        "action": event.action,
        "reason": event.reason,
        "regarding": dict(event.involved_object or {}),
        "note": event.message,
        "type": event.type,
    }
    for wire, value in (
        ("series", event.series),
        ("related", event.related),
        ("deprecatedSource", event.source),
        ("deprecatedFirstTimestamp", event.first_timestamp),
        ("deprecatedLastTimestamp", event.last_timestamp),
        ("deprecatedCount", event.count),
    ):
        if value not in (None, "", {}):
            manifest[wire] = value
    return manifest


def register_event_kinds() -> None:
    from portal.models import Event

    registry.register(
        ResourceKind(
            group="",
            version="v1",
            kind="Event",
            strategic_merge={},  # no list field of Event carries a patch strategy
            plural="events",
            description=(
                "Event is a report of something that happened to an object (core/v1): why, "
                "what, and how often. Written by the server's controllers; read-only."
            ),
            model=Event,
            short_names=("ev",),
            body=CORE_BODY,
            status=None,
            generation_fields=(),
            validators=(validate_event,),
            normalize=drop_empty_references,
            field_selectors=INVOLVED_SELECTORS,
            columns=COLUMNS,
        )
    )
    registry.register(
        ResourceKind(
            group=EVENTS_GROUP,
            version="v1",
            kind="Event",
            strategic_merge={},  # no list field of Event carries a patch strategy
            plural="events",
            description=(
                "Event is a report of something that happened to an object (events.k8s.io/v1), "
                "as a controller recorded it; read-only."
            ),
            model=Event,
            short_names=(),
            body={
                "regarding": ObjectReferenceSerializer,
                "related": ObjectReferenceSerializer,
                "note": _text(
                    help_text="A human-readable description of what happened (at most 1 KiB in Kubernetes)."
                ),
                "reason": _text(
                    help_text="A short CamelCase word saying why the action was taken, such as Scheduled."
                ),
                "type": _text(help_text="Normal or Warning."),
                "eventTime": _time(help_text="When the event was first observed, in microseconds."),
                "series": EventSeriesSerializer,
                "reportingController": _text(
                    help_text="The controller that emitted the event, such as kruntimes.io/scheduler."
                ),
                "reportingInstance": _text(
                    help_text="The instance of that controller that emitted the event."
                ),
                "action": _text(
                    help_text="What was done, or failed, about the regarding object, such as Binding."
                ),
                "deprecatedSource": EventSourceSerializer,
                "deprecatedFirstTimestamp": _time(
                    help_text="The core/v1 event's firstTimestamp: when it was first recorded."
                ),
                "deprecatedLastTimestamp": _time(
                    help_text="The core/v1 event's lastTimestamp: when it last occurred."
                ),
                "deprecatedCount": StrictIntegerField(
                    required=False,
                    allow_null=True,
                    help_text="The core/v1 event's count: how many times it occurred.",
                ),
            },
            read_only=True,
            status=None,
            generation_fields=(),
            to_manifest=events_v1_manifest,
            field_selectors=REGARDING_SELECTORS,
            columns=COLUMNS,
        )
    )
