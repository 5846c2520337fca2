"""The read-only detail page: metadata, status and conditions, labels, annotations, YAML."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from portal.machinery import admission_warnings, store
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import registry
from portal.machinery.yaml import dump

from .render import (
    NONE,
    age,
    badge,
    code_list,
    compact,
    condition_list,
    default_condition_tone,
    failure_reason,
    label_chips,
    link_to,
    simple_table,
    timestamp,
)

ANNOTATION_PREVIEW = 300
FORM_FIELDS = ("manifest", "loaded_resource_version")


class DetailMixin:
    """The change page's sections; every field but the manifest is an admin display method."""

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [
                (
                    None,
                    {
                        "fields": ["manifest"],
                        "description": "Create from a manifest: metadata.name (and "
                        "metadata.namespace) come from the YAML; it is "
                        "validated like an API request.",
                    },
                )
            ]
        fieldsets: list[tuple[str | None, dict]] = [
            ("Metadata", {"fields": self._metadata_fields(obj)})
        ]
        if self.has_status():
            status_fields = ["phase_display"] if self.has_phase() else []
            fieldsets.append(("Status", {"fields": [*status_fields, "conditions_table"]}))
        fieldsets += list(self.detail_fieldsets)
        if self._admission_warnings(obj):
            fieldsets.append(("Admission warnings", {"fields": ["admission_warnings_display"]}))
        if getattr(self, "show_events", False) and not _names_field(fieldsets, "events_table"):
            fieldsets.append(("Events", {"fields": ["events_table"]}))
        fieldsets.append(
            ("Labels and annotations", {"fields": ["labels_display", "annotations_display"]})
        )
        if self.has_change_permission(request, obj):
            fieldsets.append(
                (
                    "Edit",
                    {
                        "fields": list(FORM_FIELDS),
                        "description": "Saved through the API write path with the resourceVersion "
                        "shown above as a precondition: a concurrent change is reported "
                        "instead of overwritten.",
                    },
                )
            )
        fieldsets.append(("Object (YAML)", {"fields": ["yaml_display"], "classes": ["collapse"]}))
        return fieldsets

    def _admission_warnings(self, obj) -> list[str]:
        """What the API warns of for this object as it is (the kind's warnings hooks)."""
        if not self.resource_kind.warnings:
            return []
        try:
            return admission_warnings.of(self.resource_kind, to_manifest(self.resource_kind, obj))
        except Exception:  # a row too broken to read: its page stays up
            return []

    @admin.display(description="warnings")
    def admission_warnings_display(self, obj):
        return format_html_join(
            "",
            "<p>{} {}</p>",
            ((badge("Warning", "warn"), text) for text in self._admission_warnings(obj)),
        )

    def _metadata_fields(self, obj) -> list[str]:
        meta = ["name_display"]
        if self.resource_kind.namespaced:
            meta.append("namespace_display")
        meta += ["uid_display", "resource_version_display", "generation_display", "created_display"]
        if obj.deletion_timestamp is not None:
            meta.append("deletion_display")
        meta += ["finalizers_display", "owner_references_display"]
        return meta

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        names = []
        for _title, options in self.get_fieldsets(request, obj):
            for field in options.get("fields", ()):
                for name in field if isinstance(field, (list, tuple)) else [field]:
                    if name not in FORM_FIELDS:
                        names.append(name)
        return names

    @admin.display(description="name")
    def name_display(self, obj):
        if obj.deletion_timestamp is not None:
            return format_html("{} {}", obj.name, badge("Terminating", "warn"))
        return obj.name

    @admin.display(description="namespace")
    def namespace_display(self, obj):
        from portal.models import Namespace

        return link_to(
            Namespace.objects.filter(name=obj.namespace).first(), obj.namespace, self.admin_site
        )

    @admin.display(description="UID")
    def uid_display(self, obj):
        return format_html("<code>{}</code>", obj.uid)

    @admin.display(description="resource version")
    def resource_version_display(self, obj):
        return str(obj.resource_version)

    @admin.display(description="generation")
    def generation_display(self, obj):
        return str(obj.generation)

    @admin.display(description="created")
    def created_display(self, obj):
        return format_html(
            "{} <span class='k-muted'>({} ago)</span>",
            timestamp(obj.creation_timestamp),
            age(obj.creation_timestamp),
        )

    @admin.display(description="deletion requested")
    def deletion_display(self, obj):
        waiting = store.blocking_finalizers(self.resource_kind, obj)
        note = (
            f"waiting for finalizers: {', '.join(map(str, waiting))}"
            if waiting
            else "no finalizers left"
        )
        return format_html(
            "{} {} <span class='k-muted'>({} ago; {})</span>",
            badge("Terminating", "warn"),
            timestamp(obj.deletion_timestamp),
            age(obj.deletion_timestamp),
            note,
        )

    @admin.display(description="finalizers")
    def finalizers_display(self, obj):
        return code_list(obj.finalizers) if obj.finalizers else NONE

    @admin.display(description="owner references")
    def owner_references_display(self, obj):
        refs = obj.owner_references if isinstance(obj.owner_references, list) else []
        rows = [self._owner_reference_row(ref) for ref in refs]
        if not rows:
            return NONE
        return simple_table(("kind", "name", "apiVersion", "uid", "controller"), rows)

    @admin.display(description="part of")
    def controller_display(self, obj):
        """The object's controller (its ownerReference with ``controller: true``), linked: what
        made it, shown where the page opens rather than in the collapsed metadata."""
        refs = obj.owner_references if isinstance(obj.owner_references, list) else []
        ref = next((r for r in refs if isinstance(r, dict) and r.get("controller") is True), None)
        if ref is None:
            return NONE
        kind, name = self._owner_reference_row(ref)[:2]
        return format_html("{} {}", kind, name)

    def _owner_reference_row(self, ref: Any) -> tuple:
        if not isinstance(ref, dict):
            return ("", compact(ref), "", "", "")
        owner_kind = registry.for_manifest(ref.get("apiVersion"), ref.get("kind"))
        owner = None
        if owner_kind is not None:
            try:
                owner = owner_kind.model.objects.filter(uid=ref.get("uid")).first()
            except Exception:  # a malformed uid
                owner = None
        name = compact(ref.get("name"))
        cell = (
            link_to(owner, name, self.admin_site)
            if owner is not None
            else (
                format_html("{} <span class='k-muted'>(not found)</span>", name)
                if owner_kind is not None
                else name
            )
        )
        return (
            compact(ref.get("kind")),
            cell,
            compact(ref.get("apiVersion")),
            format_html("<code>{}</code>", compact(ref.get("uid"))),
            "yes" if ref.get("controller") else "",
        )

    @admin.display(description="phase")
    def phase_display(self, obj):
        return self.phase_cell(obj) or NONE

    @admin.display(description="conditions")
    def conditions_table(self, obj):
        status = self.status_of(obj)
        raw = status.get("conditions") if isinstance(status, dict) else None
        failed = failure_reason(status)
        tone = self.condition_tone_for(obj)
        rows = [
            _condition_row(cond, obj.generation, failed, tone) for cond in condition_list(status)
        ]
        if not rows:
            if raw not in (None, [], {}):
                return format_html(
                    "<span class='k-muted'>unexpected conditions value:</span> <code>{}</code>",
                    compact(raw),
                )
            return NONE
        return simple_table(
            ("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"),
            rows,
            "k-table k-conditions",
        )

    @admin.display(description="labels")
    def labels_display(self, obj):
        if obj.labels and not isinstance(obj.labels, dict):
            return compact(obj.labels)
        return label_chips(obj.labels) if obj.labels else NONE

    @admin.display(description="annotations")
    def annotations_display(self, obj):
        annotations = obj.annotations
        if not isinstance(annotations, dict):
            return compact(annotations)
        rows = []
        for key, value in sorted(annotations.items()):
            text = compact(value)
            if len(text) > ANNOTATION_PREVIEW:
                text = text[:ANNOTATION_PREVIEW] + f"… ({len(text)} characters; see the YAML)"
            rows.append(
                (
                    format_html("<code>{}</code>", key),
                    format_html('<span class="k-pre">{}</span>', text),
                )
            )
        if not rows:
            return NONE
        return simple_table(("key", "value"), rows)

    @admin.display(description="object")
    def yaml_display(self, obj):
        try:
            text = dump(to_manifest(self.resource_kind, obj))
        except Exception as exc:  # never let a broken row take the page down
            text = f"# could not render this object: {exc}"
        return format_html('<pre class="k-yaml">{}</pre>', text)


def _names_field(fieldsets: list[tuple[str | None, dict]], name: str) -> bool:
    return any(name in options.get("fields", ()) for _title, options in fieldsets)


def _condition_row(
    cond: dict, generation: Any, failed: str = "", tone: Any = default_condition_tone
) -> tuple:
    """One row of the conditions table; an observedGeneration behind the object's is stale."""
    state = compact(cond.get("status")) or "Unknown"
    observed = cond.get("observedGeneration")
    observed_cell = compact(observed)
    if (
        isinstance(observed, int)
        and not isinstance(observed, bool)
        and observed < (generation or 0)
    ):
        observed_cell = format_html(
            '{} <span class="k-muted" title="older than metadata.generation {}">(stale)</span>',
            observed,
            generation,
        )
    return (
        compact(cond.get("type")),
        badge(state, tone(cond, failed)),
        compact(cond.get("reason")),
        compact(cond.get("message")),
        compact(cond.get("lastTransitionTime")),
        observed_cell,
    )
