"""Comparing committed protoc output with a fresh compile of its ``.proto``."""

from __future__ import annotations


def without_json_names(messages) -> None:
    """protoc writes each field's json_name into a descriptor set, not into a _pb2 module."""
    for message in messages:
        for field in message.field:
            field.ClearField("json_name")
        without_json_names(message.nested_type)
