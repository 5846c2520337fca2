"""The one editable field, a YAML manifest, written through the store while it validates."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.core.serializers.json import DjangoJSONEncoder
from django.utils.html import format_html

from portal.machinery import admission_warnings, store
from portal.machinery.errors import StatusError
from portal.machinery.managed_fields import CONSOLE_MANAGER
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import ResourceKind
from portal.machinery.yaml import dump, load_one

from .yaml_lines import excerpt, field_line


def editable_manifest(kind: ResourceKind, obj: Any) -> dict:
    """What the operator may edit: metadata labels/annotations/finalizers/ownerReferences and
    every body field but status. (ownerReferences are included because a replace is a PUT:
    leaving them out would drop them.)"""
    full = to_manifest(kind, obj)
    meta = full.get("metadata") or {}
    editable_meta: dict = {"name": meta.get("name")}
    if kind.namespaced:
        editable_meta["namespace"] = meta.get("namespace")
    for key in ("labels", "annotations", "finalizers", "ownerReferences"):
        if meta.get(key):
            editable_meta[key] = meta[key]
    manifest = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": editable_meta}
    for wire in kind.body:
        if wire != kind.status_field and wire in full:
            manifest[wire] = full[wire]
    return manifest


def skeleton_manifest(kind: ResourceKind, namespace: str = "default") -> dict:
    from rest_framework import serializers

    meta: dict = {"name": ""}
    if kind.namespaced:
        meta["namespace"] = namespace
    manifest: dict = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}
    for wire, spec in kind.body.items():
        if wire == kind.status_field:
            continue
        many = isinstance(spec, (serializers.ListSerializer, serializers.ListField))
        mapping = isinstance(spec, (type, serializers.DictField, serializers.JSONField))
        if many or mapping:
            manifest[wire] = [] if many else {}
    return manifest


def to_plain(value: Any) -> Any:
    """YAML as JSON would carry it: timestamps and dates become RFC 3339 strings."""
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def strip_status(kind: ResourceKind, manifest: dict) -> dict:
    if kind.status_field:
        manifest = {k: v for k, v in manifest.items() if k != kind.status_field}
    return manifest


class ManifestForm(forms.ModelForm):
    """One YAML textarea; validation *is* the store write, so its errors are form errors."""

    manifest = forms.CharField(
        label="Manifest (YAML)",
        widget=forms.Textarea(
            attrs={"class": "k-manifest", "rows": 24, "spellcheck": "false", "autocomplete": "off"}
        ),
        help_text="metadata (labels, annotations, finalizers) and the spec; status is written "
        "by controllers and ignored here.",
    )
    loaded_resource_version = forms.CharField(widget=forms.HiddenInput, required=False)

    # set by ResourceAdmin.get_form
    resource_kind: ResourceKind | None = None
    request: Any = None
    # what the store warned of while it wrote (shown as messages after the save)
    warnings_given: tuple[str, ...] = ()

    class Meta:
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and not self.is_bound and self.resource_kind is not None:
            try:
                text = dump(self.editable(self.instance))
            except Exception as exc:  # a row too broken to render: show why, keep the page up
                text = f"# could not render this object: {exc}\n"
            self.initial["manifest"] = text
            self.initial["loaded_resource_version"] = str(self.instance.resource_version)

    def editable(self, obj: Any) -> dict:
        """The manifest the textarea shows (a kind's form may hold fields back)."""
        assert self.resource_kind is not None
        return editable_manifest(self.resource_kind, obj)

    def replacement(self, manifest: dict, current: Any) -> dict:
        """The whole object to PUT for the edited manifest (the fields held back put back)."""
        return manifest

    @property
    def adding(self) -> bool:
        return self.instance.pk is None

    def _post_clean(self) -> None:
        super()._post_clean()
        if self._errors or self.resource_kind is None:
            return
        manifest = self._parse(self.cleaned_data.get("manifest") or "")
        if manifest is None:
            return
        self._write(manifest)

    def _parse(self, text: str) -> dict | None:
        try:
            manifest = load_one(text)
        except ValueError as exc:
            self.add_error("manifest", str(exc))
            return None
        if not isinstance(manifest, dict):
            self.add_error("manifest", "the manifest must be a YAML mapping (an object)")
            return None
        try:
            manifest = to_plain(manifest)
        except (TypeError, ValueError) as exc:
            self.add_error("manifest", f"the manifest cannot be represented as JSON: {exc}")
            return None
        if manifest.get("metadata") is None:
            manifest["metadata"] = {}
        if not isinstance(manifest["metadata"], dict):
            self.add_error("manifest", "metadata: must be an object")
            return None
        return strip_status(self.resource_kind, manifest)

    def _write(self, manifest: dict) -> None:
        kind = self.resource_kind
        context = store.WriteContext(
            user=getattr(self.request, "user", None), field_manager=CONSOLE_MANAGER
        )
        with admission_warnings.recording() as warnings:
            self._store_write(kind, manifest, context)
        self.warnings_given = tuple(warnings)

    def _store_write(self, kind: Any, manifest: dict, context: store.WriteContext) -> None:
        try:
            if self.adding:
                obj = store.create(kind, manifest, context=context)
            else:
                current = self.instance
                if manifest == self.editable(current):
                    return  # nothing changed: no write, no new resourceVersion
                manifest = self.replacement(manifest, current)
                loaded = self.cleaned_data.get("loaded_resource_version") or str(
                    current.resource_version
                )
                manifest["metadata"] = {**manifest["metadata"], "resourceVersion": loaded}
                obj = store.replace(
                    kind,
                    getattr(current, "namespace", None),
                    current.name,
                    manifest,
                    context=context,
                )
        except StatusError as exc:
            self.add_status_error(exc)
            return
        except (TypeError, ValueError) as exc:
            self.add_error("manifest", f"the manifest could not be processed: {exc}")
            return
        self.instance = obj

    def add_status_error(self, exc: StatusError) -> None:
        """Each cause of a refused write next to the line of the field it names (the YAML
        as submitted, numbered); a cause without a field, or a Status without causes, as is."""
        if not exc.causes:
            self.add_error(None, exc.message)
            return
        text = self.cleaned_data.get("manifest") or ""
        for cause in exc.causes:
            if not cause.field:
                self.add_error("manifest", cause.message)
                continue
            line = field_line(text, cause.field)
            if line is None:
                self.add_error("manifest", f"{cause.field}: {cause.message}")
                continue
            self.add_error(
                "manifest",
                format_html(
                    "{}: {} (line {}){}",
                    cause.field,
                    cause.message,
                    line,
                    excerpt(text, line, cause.message),
                ),
            )


class ManifestFormMixin:
    """Wires ``ManifestForm`` into the admin; saving is a no-op because the form already wrote."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(
            form.__name__, (form,), {"resource_kind": self.resource_kind, "request": request}
        )

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        if "manifest" not in initial:
            namespace = request.GET.get("namespace") or self._namespace_from_filters(request)
            example = self.example_manifest(namespace or "default")
            initial["manifest"] = dump(
                example or skeleton_manifest(self.resource_kind, namespace or "default")
            )
        return initial

    def example_manifest(self, namespace: str) -> dict | None:
        """A working manifest the Add form starts from (a kind's admin gives one), else None:
        the kind's empty skeleton."""
        return None

    @staticmethod
    def _namespace_from_filters(request) -> str:
        from urllib.parse import parse_qs

        filters = parse_qs(request.GET.get("_changelist_filters", ""))
        return (filters.get("namespace") or [""])[-1]

    def save_form(self, request, form, change):
        # The store already wrote the object while the form validated (ManifestForm._write).
        for text in getattr(form, "warnings_given", ()):
            messages.warning(request, text)
        return form.instance

    def save_model(self, request, obj, form, change):
        """Nothing to do: the write happened through the store during validation."""

    def save_related(self, request, form, formsets, change):
        """Resources have no related rows the admin edits."""
