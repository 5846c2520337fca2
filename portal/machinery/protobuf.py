"""The few Kubernetes protobuf bodies a client sends this server: kubectl encodes the built-in
``authorization.k8s.io/v1`` reviews (``kubectl auth can-i``) as protobuf and does not fall back
to JSON. Decoded to the JSON-shaped dict the JSON parser would give; answers stay JSON (kubectl
accepts them).

The wire format: the magic ``k8s\\x00``, then a ``runtime.Unknown`` {typeMeta{apiVersion, kind},
raw} whose ``raw`` is the object's own message; field numbers from ``k8s.io/api``'s
``generated.proto``. Anything else is refused as an unsupported media type.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError, UnsupportedMediaType
from rest_framework.parsers import BaseParser

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# message name -> {field number: (json name, kind)}; kind "string" or a message name
STRING = "string"
SCHEMAS: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes")},
    "TypeMeta": {1: ("apiVersion", STRING), 2: ("kind", STRING)},
    "ObjectMeta": {1: ("name", STRING), 2: ("generateName", STRING), 3: ("namespace", STRING)},
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SSARSpec")},
    "SSARSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", STRING),
        2: ("verb", STRING),
        3: ("group", STRING),
        4: ("version", STRING),
        5: ("resource", STRING),
        6: ("subresource", STRING),
        7: ("name", STRING),
    },
    "NonResourceAttributes": {1: ("path", STRING), 2: ("verb", STRING)},
    "SelfSubjectRulesReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SSRRSpec")},
    "SSRRSpec": {1: ("namespace", STRING)},
    # kubectl auth whoami: nothing to read but the metadata (its status is the answer's)
    "SelfSubjectReview": {1: ("metadata", "ObjectMeta")},
}
KINDS = {"SelfSubjectAccessReview", "SelfSubjectRulesReview", "SelfSubjectReview"}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ParseError("truncated protobuf")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def decode(data: bytes, message: str) -> dict[str, Any]:
    """One message's known fields; unknown fields are skipped, as protobuf readers do."""
    schema = SCHEMAS[message]
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, at = _varint(data, at)
            continue
        if wire == 1:
            at += 8
            continue
        if wire == 5:
            at += 4
            continue
        if wire != 2:
            raise ParseError(f"unsupported protobuf wire type {wire}")
        length, at = _varint(data, at)
        chunk = data[at : at + length]
        if len(chunk) != length:
            raise ParseError("truncated protobuf")
        at += length
        if number not in schema:
            continue
        name, kind = schema[number]
        if kind == STRING:
            out[name] = chunk.decode("utf-8", errors="strict")
        elif kind == "bytes":
            out[name] = chunk
        else:
            out[name] = decode(chunk, kind)
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    if not body.startswith(MAGIC):
        raise ParseError("a Kubernetes protobuf body starts with k8s\\x00")
    try:
        unknown = decode(body[len(MAGIC) :], "Unknown")
        type_meta = unknown.get("typeMeta") or {}
        kind = type_meta.get("kind", "")
        if kind not in KINDS:
            raise UnsupportedMediaType(MEDIA_TYPE, f"protobuf is accepted only for {sorted(KINDS)}")
        obj = decode(unknown.get("raw", b""), kind)
    except UnicodeDecodeError:
        raise ParseError("a protobuf string is not UTF-8") from None
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}


class ProtobufParser(BaseParser):
    media_type = MEDIA_TYPE

    def parse(self, stream, media_type=None, parser_context=None):  # type: ignore[no-untyped-def]
        return decode_object(stream.read())
