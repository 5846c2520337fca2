"""Kubernetes' protobuf wire format for the built-in kinds served here, in and out.

kubectl and client-go send and ask for the built-in kinds (Namespace, ConfigMap, Secret, the
RBAC kinds, the access reviews, ...) as ``application/vnd.kubernetes.protobuf`` and do not fall
back to JSON for a request body: ``kubectl create configmap`` is refused without this. A body
is the magic ``k8s\\x00`` and then a ``runtime.Unknown`` {typeMeta{apiVersion, kind}, raw}
whose ``raw`` is the object's own message (``kubeproto/*.proto``: Kubernetes' own message and
field numbers, compiled with Google's ``protobuf``, the maintained implementation of the wire
format, so this module only maps messages to and from the JSON-shaped dicts the rest of the
server speaks).

A decoded body is the dict the JSON parser gives for the same object, so validation, RBAC and
admission run unchanged. Field presence follows Go's ``omitempty``: Go writes every non-pointer
field, empty or not, and reads an empty one as absent, so an empty string or a zero number is
left out (except the fields that are pointers in Go, where zero is a value), and an empty
``Time`` is no time. Answers are protobuf only for these kinds, as kube-apiserver answers JSON
for custom resources; anything not encodable (a Table) stays JSON.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer

from .kubeproto import (
    apps_pb2,
    authentication_pb2,
    authorization_pb2,
    core_pb2,
    events_pb2,
    meta_pb2,
    rbac_pb2,
    runtime_pb2,
)

log = logging.getLogger(__name__)
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# (apiVersion, kind) -> the message of a body a client may send
OBJECTS: dict[tuple[str, str], type[Message]] = {
    ("v1", "Namespace"): core_pb2.Namespace,
    ("v1", "ConfigMap"): core_pb2.ConfigMap,
    ("v1", "Secret"): core_pb2.Secret,
    ("v1", "Event"): core_pb2.Event,
    ("events.k8s.io/v1", "Event"): events_pb2.Event,
    ("apps/v1", "ControllerRevision"): apps_pb2.ControllerRevision,
    ("rbac.authorization.k8s.io/v1", "Role"): rbac_pb2.Role,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): rbac_pb2.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): rbac_pb2.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): rbac_pb2.ClusterRoleBinding,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): (
        authorization_pb2.SelfSubjectAccessReview
    ),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): (
        authorization_pb2.SelfSubjectRulesReview
    ),
    ("authentication.k8s.io/v1", "SelfSubjectReview"): authentication_pb2.SelfSubjectReview,
}
# ... and of an answer: the objects, their lists and a Status
LISTS: dict[tuple[str, str], type[Message]] = {
    ("v1", "NamespaceList"): core_pb2.NamespaceList,
    ("v1", "ConfigMapList"): core_pb2.ConfigMapList,
    ("v1", "SecretList"): core_pb2.SecretList,
    ("v1", "EventList"): core_pb2.EventList,
    ("events.k8s.io/v1", "EventList"): events_pb2.EventList,
    ("apps/v1", "ControllerRevisionList"): apps_pb2.ControllerRevisionList,
    ("rbac.authorization.k8s.io/v1", "RoleList"): rbac_pb2.RoleList,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleList"): rbac_pb2.ClusterRoleList,
    ("rbac.authorization.k8s.io/v1", "RoleBindingList"): rbac_pb2.RoleBindingList,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBindingList"): rbac_pb2.ClusterRoleBindingList,
}
ANSWERS: dict[tuple[str, str], type[Message]] = {
    **OBJECTS,
    **LISTS,
    ("v1", "Status"): meta_pb2.Status,
}

_META = "k8s.io.apimachinery.pkg.apis.meta.v1"
TIME = f"{_META}.Time"  # whole seconds on the wire to JSON clients, as Go's metav1.Time
MICRO_TIME = f"{_META}.MicroTime"
FIELDS_V1 = f"{_META}.FieldsV1"  # the JSON document itself
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"  # an embedded JSON object
# Fields that are pointers in Go: a zero there is a value the client set, not an absence.
POINTERS = {
    f"{_META}.ObjectMeta.deletionGracePeriodSeconds",
    f"{_META}.ListMeta.remainingItemCount",
    f"{_META}.OwnerReference.controller",
    f"{_META}.OwnerReference.blockOwnerDeletion",
    "k8s.io.api.core.v1.ConfigMap.immutable",
    "k8s.io.api.core.v1.Secret.immutable",
    "k8s.io.api.apps.v1.ControllerRevision.revision",  # not omitempty in Go
    "k8s.io.api.authorization.v1.SubjectAccessReviewStatus.allowed",  # not omitempty either
}


def serves(api_version: str, kind: str) -> bool:
    """Whether objects of this kind are read and answered as protobuf."""
    return (api_version, kind) in OBJECTS


# -- message -> JSON-shaped dict ---------------------------------------------------------------


def _time_out(message: Message, micro: bool) -> str | None:
    seconds: int = getattr(message, "seconds", 0)
    nanos: int = getattr(message, "nanos", 0)
    if not seconds and not nanos:
        return None  # Go's zero time: written as an empty message, read as no time
    try:
        moment = datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise ParseError(f"a protobuf time of {seconds} seconds is out of range") from None
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{max(nanos, 0) // 1000:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_document(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ParseError(f"a protobuf {what} does not hold JSON") from None


def _message_out(message: Message) -> Any:
    name = message.DESCRIPTOR.full_name
    if name in (TIME, MICRO_TIME):
        return _time_out(message, micro=name == MICRO_TIME)
    if name == FIELDS_V1:
        raw: bytes = getattr(message, "Raw", b"")
        return _json_document(raw, "FieldsV1") if raw else None
    if name == RAW_EXTENSION:
        raw = getattr(message, "raw", b"")
        return _json_document(raw, "RawExtension") if raw else None
    return to_dict(message)


def _scalar_out(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, bytes):  # a proto2 string that is not UTF-8 is handed over as bytes
        raise ParseError(f"the protobuf string {field.name} is not UTF-8")
    return value


def _message_type(field: FieldDescriptor) -> Descriptor:
    assert field.message_type is not None, field.full_name  # only asked of message fields
    return field.message_type


def _map_value(field: FieldDescriptor) -> FieldDescriptor:
    """The value field of a map field's entry message."""
    return _message_type(field).fields_by_name["value"]


def _map_out(field: FieldDescriptor, value: Mapping[str, Any]) -> dict[str, Any]:
    entry = _map_value(field)
    if entry.type == FieldDescriptor.TYPE_MESSAGE:  # map<string, ExtraValue>: a list of strings
        return {key: list(getattr(item, "items", [])) for key, item in value.items()}
    return {key: _scalar_out(entry, item) for key, item in value.items()}


def _is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and bool(
        _message_type(field).GetOptions().map_entry
    )


def to_dict(message: Message) -> dict[str, Any]:
    """A message's fields as its JSON would hold them (Go's ``omitempty`` reading)."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        if _is_map(field):
            out[field.name] = _map_out(field, value)
        elif field.is_repeated:
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                out[field.name] = [_message_out(item) for item in value]
            else:
                out[field.name] = [_scalar_out(field, item) for item in value]
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            converted = _message_out(value)
            if converted is not None:
                out[field.name] = converted
        elif value or field.full_name in POINTERS:
            out[field.name] = _scalar_out(field, value)
    return out


# -- JSON-shaped dict -> message ---------------------------------------------------------------


def _time_in(message: Message, value: Any, micro: bool) -> None:
    if not isinstance(value, str) or not value:
        return
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    setattr(message, "seconds", int(moment.timestamp()))  # noqa: B010 (a generated field)
    if micro and moment.microsecond:
        setattr(message, "nanos", moment.microsecond * 1000)  # noqa: B010


def _message_in(message: Message, value: Any) -> None:
    name = message.DESCRIPTOR.full_name
    if name in (TIME, MICRO_TIME):
        _time_in(message, value, micro=name == MICRO_TIME)
    elif name == FIELDS_V1:
        message.Raw = json.dumps(value, separators=(",", ":")).encode()  # type: ignore[attr-defined]
    elif name == RAW_EXTENSION:
        message.raw = json.dumps(value, separators=(",", ":")).encode()  # type: ignore[attr-defined]
    elif isinstance(value, Mapping):
        fill(message, value)


def _scalar_in(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64decode(value) if isinstance(value, str) else bytes(value)
    return value


def fill(message: Message, data: Mapping[str, Any]) -> Message:
    """Set a message from a JSON-shaped dict; keys the message has no field for are left out
    (``apiVersion``/``kind`` travel in the envelope)."""
    descriptor = cast(Descriptor, message.DESCRIPTOR)  # the stubs also name upb's own class
    for key, value in data.items():
        field = descriptor.fields_by_name.get(key)
        if field is None or value is None:
            continue
        target = getattr(message, key)
        if _is_map(field):
            entry = _map_value(field)
            for map_key, item in (value or {}).items():
                if entry.type == FieldDescriptor.TYPE_MESSAGE:
                    target[map_key].items.extend(item or [])
                else:
                    target[map_key] = _scalar_in(entry, item)
        elif field.is_repeated:
            for item in value:
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    _message_in(target.add(), item)
                else:
                    target.append(_scalar_in(field, item))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            _message_in(target, value)
            if not target.ListFields() and _message_type(field).full_name not in (TIME, MICRO_TIME):
                target.SetInParent()  # an empty object stays an (empty) object
        else:
            setattr(message, key, _scalar_in(field, value))
    return message


# -- the envelope ------------------------------------------------------------------------------


def decode_object(body: bytes) -> dict[str, Any]:
    """A request body as the JSON parser would have given it; 400 for bytes that are not a
    Kubernetes protobuf message, 415 for a kind this server reads only as JSON."""
    if not body.startswith(MAGIC):
        raise ParseError("a Kubernetes protobuf body starts with the magic bytes k8s\\x00")
    envelope = runtime_pb2.Unknown()
    try:
        envelope.ParseFromString(body[len(MAGIC) :])
    except DecodeError as failed:
        raise ParseError(f"the protobuf body cannot be read: {failed}") from None
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if envelope.contentEncoding:
        raise UnsupportedMediaType(
            MEDIA_TYPE, f'protobuf content encoding "{envelope.contentEncoding}" is not served'
        )
    message_class = OBJECTS.get((api_version, kind))
    if message_class is None:
        raise UnsupportedMediaType(
            MEDIA_TYPE,
            f"protobuf is accepted only for the built-in kinds served here, not for "
            f'"{kind}" of "{api_version}"; send it as application/json',
        )
    message = message_class()
    try:
        message.ParseFromString(envelope.raw)
        obj = to_dict(message)
    except DecodeError as failed:
        raise ParseError(f"the protobuf {kind} cannot be read: {failed}") from None
    except UnicodeDecodeError:
        raise ParseError("a protobuf string is not UTF-8") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def encode_object(data: Any) -> bytes | None:
    """An answer in the wire format, or None when its kind is answered only as JSON."""
    if not isinstance(data, Mapping):
        return None
    key = (str(data.get("apiVersion", "")), str(data.get("kind", "")))
    message_class = ANSWERS.get(key)
    if message_class is None:
        return None
    try:
        raw = fill(message_class(), data).SerializeToString()
    except (TypeError, ValueError, OverflowError) as failed:  # a stored value of an odd shape
        log.warning("answering %s %s as JSON: not encodable as protobuf: %s", *key, failed)
        return None
    envelope = runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=key[0], kind=key[1]), raw=raw
    )
    return MAGIC + envelope.SerializeToString()


class ProtobufParser(BaseParser):
    media_type = MEDIA_TYPE

    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        request = (parser_context or {}).get("request")
        if getattr(request, "method", "") == "PATCH":  # a patch is a patch type, never an object
            raise UnsupportedMediaType(
                MEDIA_TYPE, "a patch is not protobuf: send a JSON merge patch or a JSON patch"
            )
        return decode_object(stream.read() if stream is not None else b"")


class ProtobufRenderer(BaseRenderer):
    """Answers a built-in kind in the wire format; anything else it is handed (a Table) goes
    out as JSON with a JSON Content-Type."""

    media_type = MEDIA_TYPE
    format = "protobuf"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):  # type: ignore[no-untyped-def]
        encoded = encode_object(data)
        if encoded is not None:
            return encoded
        response = (renderer_context or {}).get("response")
        if response is not None:
            response["Content-Type"] = JSONRenderer.media_type
        return JSONRenderer().render(data, None, renderer_context)
