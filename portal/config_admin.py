"""The admin of v1 Secret and ConfigMap, and of apps/v1 ControllerRevision (read only).

A Secret's values are never shown: its list and change page show keys and their sizes, its
YAML leaves ``data`` out, and its edit form holds ``data`` back. An operator sets a key's
new value by adding it under ``stringData`` (write-only: it is folded into ``data`` and never
shown again) and removes a key with ``data: {key: null}``; every save goes through the store.
A ConfigMap's data is configuration, shown as it is.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.html import format_html

from portal.config_kinds import decoded, secret_in_list
from portal.machinery.manifest import to_manifest
from portal.machinery.yaml import dump
from portal.models import ConfigMap, ControllerRevision, Secret
from portal.resource_admin import NONE, ManifestForm, ResourceAdmin, simple_table

SECRET_EDIT_HELP = (
    "metadata, type and immutable. Values are never shown: set a key's new value under "
    "stringData (key: value), remove a key with data: {key: null}; keys you leave out keep "
    "their values."
)


def size_of(value: Any) -> str:
    raw = decoded(value) if isinstance(value, str) else None
    return f"{len(raw)} bytes" if raw is not None else "not base64"


class SecretManifestForm(ManifestForm):
    """The Secret's manifest without ``data``; the edits are applied over the stored data."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["manifest"].help_text = SECRET_EDIT_HELP

    def editable(self, obj: Any) -> dict:
        manifest = super().editable(obj)
        manifest.pop("data", None)
        return manifest

    def replacement(self, manifest: dict, current: Any) -> dict:
        changes = manifest.get("data")
        if changes is not None and not isinstance(changes, dict):
            return manifest  # the store names the type error
        data = dict(current.data or {})
        for key, value in (changes or {}).items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        return {**manifest, "data": data}


@admin.register(Secret)
class SecretAdmin(ResourceAdmin):
    form = SecretManifestForm
    extra_list_display = ["keys_cell"]
    detail_fieldsets = [("Data (values are never shown)", {"fields": ["keys_display"]})]

    @admin.display(description="KEYS")
    def keys_cell(self, obj):
        return ", ".join(sorted(obj.data or {})) or NONE

    @admin.display(description="keys")
    def keys_display(self, obj):
        rows = [
            (format_html("<code>{}</code>", key), size_of(value))
            for key, value in sorted((obj.data or {}).items())
        ]
        return simple_table(("key", "size"), rows) if rows else "no keys"

    @admin.display(description="object")
    def yaml_display(self, obj):
        try:
            text = "# data values are not shown\n" + dump(
                secret_in_list(to_manifest(self.resource_kind, obj))
            )
        except Exception as exc:  # never let a broken row take the page down
            text = f"# could not render this object: {type(exc).__name__}"
        return format_html('<pre class="k-yaml">{}</pre>', text)


@admin.register(ConfigMap)
class ConfigMapAdmin(ResourceAdmin):
    detail_fieldsets = [("Data", {"fields": ["data_display", "binary_data_display"]})]

    @admin.display(description="data")
    def data_display(self, obj):
        rows = [
            (format_html("<code>{}</code>", key), format_html('<span class="k-pre">{}</span>', v))
            for key, v in sorted((obj.data or {}).items())
        ]
        return simple_table(("key", "value"), rows) if rows else NONE

    @admin.display(description="binaryData")
    def binary_data_display(self, obj):
        rows = [
            (format_html("<code>{}</code>", key), size_of(value))
            for key, value in sorted((obj.binary_data or {}).items())
        ]
        return simple_table(("key", "size"), rows) if rows else NONE


@admin.register(ControllerRevision)
class ControllerRevisionAdmin(ResourceAdmin):
    """A controller's snapshot (a WorkflowRun's resolved definitions): read, never edited."""

    detail_fieldsets = [("Data", {"fields": ["revision", "data_display"]})]

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="data")
    def data_display(self, obj):
        return format_html('<pre class="k-yaml">{}</pre>', dump(obj.data))
