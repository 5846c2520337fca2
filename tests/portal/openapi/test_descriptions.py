"""Every property of every served OpenAPI v3 document has a description, so ``kubectl
explain`` never prints ``<no description>``: the descriptions are the serializer fields'
``help_text`` (and the shared meta definitions), written once where each field is declared."""

from __future__ import annotations

from typing import Any

import pytest

from portal.machinery.registry import registry

pytestmark = pytest.mark.django_db


def undescribed(schema: dict[str, Any], path: str) -> list[str]:
    """The paths of the properties under ``schema`` (through properties, array items, map
    values and allOf/anyOf/oneOf) whose description is missing or blank."""
    found: list[str] = []
    for name, prop in (schema.get("properties") or {}).items():
        here = f"{path}.{name}"
        if not str(prop.get("description") or "").strip():
            found.append(here)
        found += undescribed(prop, here)
    if isinstance(schema.get("items"), dict):
        found += undescribed(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        found += undescribed(schema["additionalProperties"], f"{path}{{}}")
    for key in ("allOf", "anyOf", "oneOf"):
        for index, part in enumerate(schema.get(key) or []):
            found += undescribed(part, f"{path}<{key}[{index}]>")
    return found


def served_documents(api) -> dict[str, dict[str, Any]]:
    index = api.get("/openapi/v3").json()
    documents = {}
    for key, entry in index["paths"].items():
        response = api.get(entry["serverRelativeURL"])
        assert response.status_code == 200, (key, response.content[:300])
        documents[key] = response.json()
    return documents


def test_the_walk_finds_a_property_without_a_description():
    schema = {
        "type": "object",
        "description": "top",
        "properties": {
            "spec": {
                "type": "object",
                "description": "the spec",
                "properties": {
                    "items": {
                        "type": "array",
                        "description": "a list",
                        "items": {"type": "object", "properties": {"bare": {"type": "string"}}},
                    },
                    "map": {
                        "type": "object",
                        "description": "a map",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"blank": {"type": "string", "description": " "}},
                        },
                    },
                },
            },
            "status": {"type": "object"},
        },
    }
    assert undescribed(schema, "X") == ["X.spec.items[].bare", "X.spec.map{}.blank", "X.status"]


def test_every_property_of_every_served_document_has_a_description(admin_api):
    documents = served_documents(admin_api)
    served = {k.group or "core" for k in registry.kinds}
    assert {key.split("/")[-2] if key != "api/v1" else "core" for key in documents} == served
    missing = [
        f"{key} {name}{path[len(name) :]}"
        for key, document in documents.items()
        for name, schema in document["components"]["schemas"].items()
        for path in undescribed(schema, name)
    ]
    assert missing == [], f"{len(missing)} properties have no description:\n" + "\n".join(missing)


def test_every_kind_says_what_it_is(admin_api):
    """The kind's own description (what ``kubectl explain <plural>`` prints first) is written
    for it, not the generic fallback."""
    generic = []
    for key, document in served_documents(admin_api).items():
        for name, schema in document["components"]["schemas"].items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                group = f"{gvk['group']}/" if gvk["group"] else ""
                fallback = f"{gvk['kind']} is a {group}{gvk['version']} resource."
                if not schema.get("description") or schema["description"] == fallback:
                    generic.append(f"{key} {name}")
    assert generic == []
