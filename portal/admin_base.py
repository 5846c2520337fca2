"""``ResourceAdmin``: the one admin every Kubernetes-shaped kind shares.

Everything is derived from the kind's ``ResourceKind`` (``registry.for_model``): the list columns
(name, namespace, printer columns, a phase badge, conditions at a glance, labels, age), the
filters, search, a read-only detail page (metadata, conditions, labels, the whole object as YAML)
and one editable "manifest" YAML textarea. Every write goes through ``portal.machinery.store``
(validation, resourceVersion compare-and-set, finalizers): the admin never saves a row itself.

An app registers a kind with one line::

    admin.site.register(Runtime, ResourceAdmin)

and extras by subclassing: ``detail_fieldsets`` (read-only sections, e.g. a rules table),
``extra_list_display`` (more list cells), ``actions`` (more actions), ``force_finalize_patch``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import ImproperlyConfigured
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q
from django.db.models.fields.json import KeyTransform
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from portal.machinery import store
from portal.machinery.conditions import format_time
from portal.machinery.errors import StatusError
from portal.machinery.manifest import to_manifest
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.yaml import dump, load_one

# The label filter offers the most common key=value pairs of this many most recent objects.
LABEL_FILTER_SAMPLE = 500
LABEL_FILTER_CHOICES = 40
LIST_LABEL_CHIPS = 4
ANNOTATION_PREVIEW = 300

GOOD_PHASES = {"active", "ready", "running", "succeeded", "bound", "available", "complete",
               "completed", "accepted", "healthy"}
BAD_PHASES = {"failed", "error", "lost", "unschedulable", "crashloopbackoff", "degraded",
              "rejected", "invalid"}
WARN_PHASES = {"terminating", "deleting", "releasing", "cancelling", "canceling", "cancelled",
               "canceled", "fencing"}
PENDING_PHASES = {"pending", "waiting", "binding", "provisioning", "scheduling", "scheduled",
                  "creating", "starting", "queued", "unknown", ""}


# ---------------------------------------------------------------------------------------------
# small renderers (tolerant of any JSON shape)


def human_duration(seconds: float) -> str:
    """kubectl's ``HumanDuration``: 45s, 5m30s, 5m, 3h20m, 30h, 3d4h, 90d, 2y10d."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{int(seconds)}s"
    minutes = int(seconds // 60)
    if minutes < 10:
        rest = int(seconds) % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = int(seconds // 3600)
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    years, rest = divmod(days, 365)
    if years < 8:
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def age(dt: Any) -> str:
    if dt is None:
        return ""
    try:
        return human_duration((timezone.now() - dt).total_seconds())
    except (TypeError, ValueError):
        return ""


def timestamp(dt: Any) -> str:
    if dt is None:
        return ""
    try:
        return format_time(dt)
    except (TypeError, ValueError, AttributeError):
        return str(dt)


def compact(value: Any) -> str:
    """A printable cell for any JSON value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        try:
            return json.dumps(value, separators=(",", ":"), sort_keys=True, cls=DjangoJSONEncoder)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def phase_tone(phase: str) -> str:
    key = (phase or "").strip().lower()
    if key in GOOD_PHASES:
        return "ok"
    if key in BAD_PHASES:
        return "bad"
    if key in WARN_PHASES:
        return "warn"
    if key in PENDING_PHASES:
        return "pending"
    return "info"


NONE = mark_safe('<span class="k-muted">none</span>')


def badge(text: Any, tone: str, title: str = "") -> SafeString:
    return format_html('<span class="k-badge k-{}" title="{}">{}</span>', tone, title, text)


def condition_list(status: Any) -> list[dict]:
    """``status.conditions`` as a list of dicts, whatever the stored shape."""
    if not isinstance(status, dict):
        return []
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if isinstance(c, dict)]


def condition_tone(status: Any) -> str:
    return {"True": "ok", "False": "bad"}.get(str(status), "unknown")


def condition_badges(status: Any) -> SafeString:
    parts = []
    for cond in condition_list(status):
        ctype = compact(cond.get("type")) or "?"
        state = compact(cond.get("status")) or "Unknown"
        reason = compact(cond.get("reason"))
        message = compact(cond.get("message"))
        title = f"{ctype}={state}" + (f" ({reason})" if reason else "")
        if message:
            title += f": {message[:300]}"
        parts.append(badge(ctype, condition_tone(state), title))
    return mark_safe(" ".join(parts))  # noqa: S308 - each part is escaped by format_html


def label_pairs(labels: Any) -> list[tuple[str, str]]:
    if not isinstance(labels, dict):
        return []
    return sorted((str(k), compact(v)) for k, v in labels.items())


def label_chips(labels: Any, limit: int | None = None) -> SafeString:
    pairs = label_pairs(labels)
    shown = pairs if limit is None else pairs[:limit]
    html = format_html_join(" ", '<span class="k-chip" title="{0}={1}">{0}={1}</span>', shown)
    hidden = pairs[len(shown):]
    if hidden:
        more = ", ".join(f"{k}={v}" for k, v in hidden)
        html = format_html('{} <span class="k-chip k-more" title="{}">+{}</span>', html, more,
                           len(hidden))
    return html


def simple_table(headers: Iterable[str], rows: Iterable[Iterable[Any]],
                 css: str = "k-table") -> SafeString:
    head = format_html_join("", "<th>{}</th>", ((h,) for h in headers))
    body = format_html_join(
        "", "<tr>{}</tr>",
        ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows))
    return format_html('<table class="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
                       css, head, body)


def code_list(values: Any) -> SafeString:
    if values is None:
        return mark_safe("")
    if not isinstance(values, list):
        values = [values]
    return format_html_join(" ", "<code>{}</code>",
                            ((compact(v) if v != "" else '""',) for v in values))


def admin_change_url(obj: Any, admin_site: admin.AdminSite | None = None) -> str | None:
    """The admin change page of a row, when its model is registered."""
    site = admin_site or admin.site
    model = type(obj)
    if not site.is_registered(model):
        return None
    opts = model._meta
    try:
        return reverse(f"{site.name}:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    except NoReverseMatch:
        return None


def find_object(kind: ResourceKind | None, namespace: str | None, name: str) -> Any:
    if kind is None or not isinstance(name, str):
        return None
    query = kind.model.objects.filter(name=name)
    if kind.namespaced:
        query = query.filter(namespace=namespace or "")
    return query.first()


def link_to(obj: Any, text: str, admin_site: admin.AdminSite | None = None) -> SafeString:
    url = admin_change_url(obj, admin_site) if obj is not None else None
    if url is None:
        return format_html("{}", text)
    return format_html('<a href="{}">{}</a>', url, text)


# ---------------------------------------------------------------------------------------------
# the manifest form


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
        widget=forms.Textarea(attrs={"class": "k-manifest", "rows": 24, "spellcheck": "false",
                                     "autocomplete": "off"}),
        help_text="metadata (labels, annotations, finalizers) and the spec; status is written "
                  "by controllers and ignored here.")
    loaded_resource_version = forms.CharField(widget=forms.HiddenInput, required=False)

    # set by ResourceAdmin.get_form
    resource_kind: ResourceKind | None = None
    request: Any = None

    class Meta:
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and not self.is_bound and self.resource_kind is not None:
            try:
                text = dump(editable_manifest(self.resource_kind, self.instance))
            except Exception as exc:  # a row too broken to render: show why, keep the page up
                text = f"# could not render this object: {exc}\n"
            self.initial["manifest"] = text
            self.initial["loaded_resource_version"] = str(self.instance.resource_version)

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
        context = store.WriteContext(user=getattr(self.request, "user", None))
        try:
            if self.adding:
                obj = store.create(kind, manifest, context=context)
            else:
                current = self.instance
                if manifest == editable_manifest(kind, current):
                    return  # nothing changed: no write, no new resourceVersion
                loaded = self.cleaned_data.get("loaded_resource_version") or str(
                    current.resource_version)
                manifest["metadata"] = {**manifest["metadata"], "resourceVersion": loaded}
                obj = store.replace(kind, getattr(current, "namespace", None), current.name,
                                    manifest, context=context)
        except StatusError as exc:
            self.add_status_error(exc)
            return
        except (TypeError, ValueError) as exc:
            self.add_error("manifest", f"the manifest could not be processed: {exc}")
            return
        self.instance = obj

    def add_status_error(self, exc: StatusError) -> None:
        if exc.causes:
            for cause in exc.causes:
                self.add_error("manifest", f"{cause.field}: {cause.message}"
                               if cause.field else cause.message)
        else:
            self.add_error(None, exc.message)


# ---------------------------------------------------------------------------------------------
# list filters


class TerminatingFilter(admin.SimpleListFilter):
    title = "terminating"
    parameter_name = "terminating"

    def lookups(self, request, model_admin):
        return (("yes", "Terminating"), ("no", "Not terminating"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(deletion_timestamp__isnull=False)
        if self.value() == "no":
            return queryset.filter(deletion_timestamp__isnull=True)
        return queryset


def filter_by_label(queryset, term: str):
    """``key=value`` (or ``key==value``), ``key!=value``, ``key`` (exists), ``!key``."""
    term = term.strip()
    # one alias per selector term, so several terms AND together
    alias = f"_label_{len(queryset.query.annotations)}"
    if "!=" in term:
        key, _, value = term.partition("!=")
        key, value = key.strip(), value.strip()
        return queryset.alias(**{alias: KeyTransform(key, "labels")}).filter(
            ~Q(labels__has_key=key) | ~Q(**{alias: value}))
    if "=" in term:
        key, _, value = term.partition("=")
        value = value[1:] if value.startswith("=") else value
        return queryset.alias(**{alias: KeyTransform(key.strip(), "labels")}).filter(
            **{alias: value.strip()})
    if term.startswith("!"):
        return queryset.exclude(labels__has_key=term[1:].strip())
    return queryset.filter(labels__has_key=term)


class LabelFilter(admin.SimpleListFilter):
    """The most common ``key=value`` pairs among the newest objects (a bounded sample)."""

    title = "label"
    parameter_name = "label"

    def lookups(self, request, model_admin):
        sample = (model_admin.get_queryset(request).order_by("-creation_timestamp")
                  .values_list("labels", flat=True)[:LABEL_FILTER_SAMPLE])
        counts: Counter = Counter()
        for labels in sample:
            counts.update(f"{k}={v}" for k, v in label_pairs(labels))
        common = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        choices = sorted(pair for pair, _ in common[:LABEL_FILTER_CHOICES])
        current = self.value()
        if current and current not in choices:
            choices.insert(0, current)
        return [(pair, pair) for pair in choices]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        return filter_by_label(queryset, value)


# ---------------------------------------------------------------------------------------------
# the admin


def _column_cell(column: Column) -> Callable[[Any], Any]:
    def cell(obj: Any) -> Any:
        try:
            value = column.value(obj)
        except Exception:  # a printer column must never take the list down
            return badge("?", "unknown", "this column could not be computed for this object")
        return compact(value) if isinstance(value, (dict, list, bool)) else value

    cell.short_description = column.header  # type: ignore[attr-defined]
    cell.__name__ = "column_" + "".join(c if c.isalnum() else "_" for c in column.header.lower())
    return cell


PHASE_HEADERS = {"PHASE", "STATUS"}


class ResourceAdmin(admin.ModelAdmin):
    form = ManifestForm
    change_list_template = "admin/resource/change_list.html"
    change_form_template = "admin/resource/change_form.html"
    delete_confirmation_template = "admin/resource/delete_confirmation.html"
    action_confirmation_template = "admin/resource/action_confirmation.html"
    actions = ["delete_objects", "remove_finalizers"]
    delete_action_label = "Delete (Kubernetes semantics)"
    search_help_text = ("Name, namespace or label text; key=value (or key, !key, key!=value) "
                        "matches labels exactly.")
    # Extra read-only sections on the change page: [(title, {"fields": [...], ...}), ...];
    # every field named here is a method of the admin (it is added to readonly_fields).
    detail_fieldsets: list[tuple[str | None, dict]] = []
    # Extra list cells (admin methods or callables), shown before conditions/labels/age.
    extra_list_display: list[Any] = []

    # ------------------------------------------------------------------ the kind

    @property
    def resource_kind(self) -> ResourceKind:
        kind = registry.for_model(self.model)
        if kind is None:
            raise ImproperlyConfigured(
                f"{self.model.__name__} has no registered ResourceKind; ResourceAdmin derives "
                "its pages from portal.machinery.registry")
        return kind

    def has_phase(self) -> bool:
        return any(f.name == "phase" for f in self.model._meta.concrete_fields)

    def has_status(self) -> bool:
        kind = self.resource_kind
        return bool(kind.status_field) and hasattr(self.model, kind.attr(kind.status_field))

    def status_of(self, obj: Any) -> Any:
        kind = self.resource_kind
        return getattr(obj, kind.attr(kind.status_field), None) if kind.status_field else None

    # ------------------------------------------------------------------ the list

    def get_list_display(self, request):
        kind = self.resource_kind
        cells: list[Any] = ["name_cell"]
        if kind.namespaced:
            cells.append("namespace_cell")
        phase_placed = False
        for column in kind.columns:
            if column.wide:
                continue
            if self.has_phase() and column.header.upper() in PHASE_HEADERS:
                if not phase_placed:
                    cells.append("phase_cell")
                    phase_placed = True
                continue
            cells.append(_column_cell(column))
        if self.has_phase() and not phase_placed:
            cells.append("phase_cell")
        cells.extend(self.extra_list_display)
        if self.has_status():
            cells.append("conditions_cell")
        cells += ["labels_cell", "age_cell"]
        return cells

    def get_list_display_links(self, request, list_display):
        return ["name_cell"]

    def get_list_filter(self, request):
        filters: list[Any] = []
        if self.resource_kind.namespaced:
            filters.append("namespace")
        if self.has_phase():
            filters.append("phase")
        return [*filters, TerminatingFilter, LabelFilter]

    def get_search_fields(self, request):
        if self.resource_kind.namespaced:
            return ("name", "namespace", "labels")
        return ("name", "labels")

    def get_search_results(self, request, queryset, search_term):
        """Plain words search name/namespace/label text; ``k=v`` terms select labels exactly."""
        words, selectors = [], []
        for term in search_term.split():
            if "=" in term or term.startswith("!"):
                selectors.append(term)
            else:
                words.append(term)
        for term in selectors:
            queryset = filter_by_label(queryset, term)
        return super().get_search_results(request, queryset, " ".join(words))

    @admin.display(description="NAME", ordering="name")
    def name_cell(self, obj):
        if obj.deletion_timestamp is not None:
            return format_html('{} {}', obj.name, badge(
                "Terminating", "warn", f"deletionTimestamp {timestamp(obj.deletion_timestamp)}; "
                f"finalizers: {', '.join(map(str, obj.finalizers or [])) or 'none'}"))
        return obj.name

    @admin.display(description="NAMESPACE", ordering="namespace")
    def namespace_cell(self, obj):
        return obj.namespace

    @admin.display(description="PHASE", ordering="phase")
    def phase_cell(self, obj):
        phase = getattr(obj, "phase", "") or ""
        if not phase:
            return ""
        return badge(phase, phase_tone(phase))

    @admin.display(description="CONDITIONS")
    def conditions_cell(self, obj):
        return condition_badges(self.status_of(obj))

    @admin.display(description="LABELS")
    def labels_cell(self, obj):
        return label_chips(obj.labels, LIST_LABEL_CHIPS)

    @admin.display(description="AGE", ordering="-creation_timestamp")
    def age_cell(self, obj):
        return format_html('<span title="{}">{}</span>', timestamp(obj.creation_timestamp),
                           age(obj.creation_timestamp))

    # ------------------------------------------------------------------ the detail page

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return [(None, {"fields": ["manifest"],
                            "description": "Create from a manifest: metadata.name (and "
                                           "metadata.namespace) come from the YAML; it is "
                                           "validated like an API request."})]
        kind = self.resource_kind
        meta = ["name_display"]
        if kind.namespaced:
            meta.append("namespace_display")
        meta += ["uid_display", "resource_version_display", "generation_display",
                 "created_display"]
        if obj.deletion_timestamp is not None:
            meta.append("deletion_display")
        meta += ["finalizers_display", "owner_references_display"]
        fieldsets: list[tuple[str | None, dict]] = [("Metadata", {"fields": meta})]
        if self.has_status():
            status_fields = ["phase_display"] if self.has_phase() else []
            fieldsets.append(("Status", {"fields": [*status_fields, "conditions_table"]}))
        fieldsets += list(self.detail_fieldsets)
        fieldsets.append(("Labels and annotations",
                          {"fields": ["labels_display", "annotations_display"]}))
        if self.has_change_permission(request, obj):
            fieldsets.append(("Edit", {
                "fields": ["manifest", "loaded_resource_version"],
                "description": "Saved through the API write path with the resourceVersion "
                               "shown above as a precondition: a concurrent change is reported "
                               "instead of overwritten."}))
        fieldsets.append(("Object (YAML)", {"fields": ["yaml_display"],
                                            "classes": ["collapse"]}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        names = []
        for _title, options in self.get_fieldsets(request, obj):
            for field in options.get("fields", ()):
                for name in (field if isinstance(field, (list, tuple)) else [field]):
                    if name not in ("manifest", "loaded_resource_version"):
                        names.append(name)
        return names

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"resource_kind": self.resource_kind,
                                             "request": request})

    def get_changeform_initial_data(self, request):
        initial = super().get_changeform_initial_data(request)
        if "manifest" not in initial:
            namespace = request.GET.get("namespace") or self._namespace_from_filters(request)
            initial["manifest"] = dump(skeleton_manifest(self.resource_kind,
                                                         namespace or "default"))
        return initial

    @staticmethod
    def _namespace_from_filters(request) -> str:
        from urllib.parse import parse_qs

        filters = parse_qs(request.GET.get("_changelist_filters", ""))
        return (filters.get("namespace") or [""])[-1]

    def save_form(self, request, form, change):
        # The store already wrote the object while the form validated (ManifestForm._write).
        return form.instance

    def save_model(self, request, obj, form, change):
        """Nothing to do: the write happened through the store during validation."""

    def save_related(self, request, form, formsets, change):
        """Resources have no related rows the admin edits."""

    @admin.display(description="name")
    def name_display(self, obj):
        if obj.deletion_timestamp is not None:
            return format_html("{} {}", obj.name, badge("Terminating", "warn"))
        return obj.name

    @admin.display(description="namespace")
    def namespace_display(self, obj):
        from portal.models import Namespace

        return link_to(Namespace.objects.filter(name=obj.namespace).first(), obj.namespace,
                       self.admin_site)

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
        return format_html("{} <span class='k-muted'>({} ago)</span>",
                           timestamp(obj.creation_timestamp), age(obj.creation_timestamp))

    @admin.display(description="deletion requested")
    def deletion_display(self, obj):
        waiting = store.blocking_finalizers(self.resource_kind, obj)
        note = (f"waiting for finalizers: {', '.join(map(str, waiting))}" if waiting
                else "no finalizers left")
        return format_html("{} {} <span class='k-muted'>({} ago; {})</span>",
                           badge("Terminating", "warn"), timestamp(obj.deletion_timestamp),
                           age(obj.deletion_timestamp), note)

    @admin.display(description="finalizers")
    def finalizers_display(self, obj):
        return code_list(obj.finalizers) if obj.finalizers else NONE

    @admin.display(description="owner references")
    def owner_references_display(self, obj):
        refs = obj.owner_references if isinstance(obj.owner_references, list) else []
        rows = []
        for ref in refs:
            if not isinstance(ref, dict):
                rows.append(("", compact(ref), "", "", ""))
                continue
            owner_kind = registry.for_manifest(ref.get("apiVersion"), ref.get("kind"))
            owner = None
            if owner_kind is not None:
                try:
                    owner = owner_kind.model.objects.filter(uid=ref.get("uid")).first()
                except Exception:  # a malformed uid
                    owner = None
            name = compact(ref.get("name"))
            cell = link_to(owner, name, self.admin_site) if owner is not None else (
                format_html("{} <span class='k-muted'>(not found)</span>", name)
                if owner_kind is not None else name)
            rows.append((compact(ref.get("kind")), cell, compact(ref.get("apiVersion")),
                         format_html("<code>{}</code>", compact(ref.get("uid"))),
                         "yes" if ref.get("controller") else ""))
        if not rows:
            return NONE
        return simple_table(("kind", "name", "apiVersion", "uid", "controller"), rows)

    @admin.display(description="phase")
    def phase_display(self, obj):
        return self.phase_cell(obj) or NONE

    @admin.display(description="conditions")
    def conditions_table(self, obj):
        status = self.status_of(obj)
        raw = status.get("conditions") if isinstance(status, dict) else None
        rows = []
        for cond in condition_list(status):
            state = compact(cond.get("status")) or "Unknown"
            observed = cond.get("observedGeneration")
            observed_cell = compact(observed)
            if isinstance(observed, int) and not isinstance(observed, bool) \
                    and observed < (obj.generation or 0):
                observed_cell = format_html(
                    '{} <span class="k-muted" title="older than metadata.generation {}">'
                    "(stale)</span>", observed, obj.generation)
            rows.append((compact(cond.get("type")), badge(state, condition_tone(state)),
                         compact(cond.get("reason")), compact(cond.get("message")),
                         compact(cond.get("lastTransitionTime")), observed_cell))
        if not rows:
            if raw not in (None, [], {}):
                return format_html("<span class='k-muted'>unexpected conditions value:</span> "
                                   "<code>{}</code>", compact(raw))
            return NONE
        return simple_table(("type", "status", "reason", "message", "lastTransitionTime",
                             "observedGeneration"), rows, "k-table k-conditions")

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
            rows.append((format_html("<code>{}</code>", key),
                         format_html('<span class="k-pre">{}</span>', text)))
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

    # ------------------------------------------------------------------ deletion

    def _context(self, request) -> store.WriteContext:
        return store.WriteContext(user=request.user)

    def _delete(self, request, obj) -> tuple[bool | None, str]:
        """store.delete one object: (gone, error message)."""
        try:
            _, gone = store.delete(self.resource_kind, getattr(obj, "namespace", None),
                                   obj.name, context=self._context(request))
        except StatusError as exc:
            return None, exc.message
        return gone, ""

    def delete_model(self, request, obj):
        gone, error = self._delete(request, obj)
        request._resource_delete_result = (gone, error)

    def delete_queryset(self, request, queryset):
        for obj in list(queryset):
            self._delete(request, obj)

    def render_delete_form(self, request, context):
        obj = context.get("object")
        if obj is not None:
            context["blocking_finalizers"] = store.blocking_finalizers(self.resource_kind, obj)
        return super().render_delete_form(request, context)

    def response_delete(self, request, obj_display, obj_id):
        gone, error = getattr(request, "_resource_delete_result", (True, ""))
        if gone:
            return super().response_delete(request, obj_display, obj_id)
        opts = self.model._meta
        if error:
            self.message_user(request, f"Could not delete {obj_display}: {error}",
                              messages.ERROR)
        else:
            obj = self.model.objects.filter(pk=obj_id).first()
            waiting = store.blocking_finalizers(self.resource_kind, obj) if obj else []
            self.message_user(
                request, f"The {opts.verbose_name} “{obj_display}” is Terminating: it stays "
                f"until its finalizers are removed ({', '.join(map(str, waiting))}).",
                messages.WARNING)
        if self.model.objects.filter(pk=obj_id).exists():
            return HttpResponseRedirect(reverse(
                f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_change",
                args=[obj_id]))
        return HttpResponseRedirect(reverse(
            f"{self.admin_site.name}:{opts.app_label}_{opts.model_name}_changelist"))

    # ------------------------------------------------------------------ actions

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # Django's would delete rows behind the store
        if "delete_objects" in actions:
            func, name, _description = actions["delete_objects"]
            actions["delete_objects"] = (func, name, self.delete_action_label)
        return actions

    def confirm_action(self, request, queryset, *, action: str, title: str, intro: str,
                       warning: str = "", button: str = "Yes, I’m sure"):
        """Django's intermediate-page pattern: the action runs when ``post=yes`` comes back."""
        kind = self.resource_kind
        rows = []
        for obj in queryset:
            rows.append({
                "obj": obj,
                "url": admin_change_url(obj, self.admin_site),
                "finalizers": store.blocking_finalizers(kind, obj),
                "terminating": obj.deletion_timestamp is not None,
            })
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": None,
            "intro": intro,
            "warning": warning,
            "button": button,
            "rows": rows,
            "queryset": queryset,
            "opts": self.model._meta,
            "action_name": action,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.action_confirmation_template, context)

    @admin.action(permissions=["delete"], description="Delete (Kubernetes semantics)")
    def delete_objects(self, request, queryset):
        opts = self.model._meta
        if request.POST.get("post") != "yes":
            return self.confirm_action(
                request, queryset, action="delete_objects",
                title=f"Delete {opts.verbose_name_plural}",
                intro=f"Delete these {opts.verbose_name_plural}? Objects with finalizers are "
                      "marked Terminating and stay until their finalizers are removed; "
                      "dependents are garbage-collected through their owner references.")
        gone, terminating, failed = [], [], []
        for obj in list(queryset):
            label = str(obj)
            done, error = self._delete(request, obj)
            if error:
                failed.append(f"{label}: {error}")
            elif done:
                gone.append(label)
            else:
                terminating.append(label)
        if gone:
            self.message_user(request, f"Deleted {len(gone)} {opts.verbose_name_plural}: "
                              f"{', '.join(gone)}.", messages.SUCCESS)
        if terminating:
            self.message_user(request, f"{len(terminating)} {opts.verbose_name_plural} are "
                              f"Terminating, waiting for finalizers: {', '.join(terminating)}.",
                              messages.WARNING)
        for line in failed:
            self.message_user(request, f"Could not delete {line}", messages.ERROR)
        return None

    def force_finalize_patch(self, obj) -> dict:
        """The merge patch that releases every finalizer holding ``obj``."""
        return {"metadata": {"finalizers": None}}

    @admin.action(permissions=["change"], description="Remove finalizers (force)")
    def remove_finalizers(self, request, queryset):
        opts = self.model._meta
        if request.POST.get("post") != "yes":
            return self.confirm_action(
                request, queryset, action="remove_finalizers",
                title=f"Remove finalizers from {opts.verbose_name_plural}",
                intro="Remove every finalizer from these objects?",
                warning="This skips the cleanup the finalizers' controllers would do (e.g. "
                        "deleting workspace data or external resources). Objects that are "
                        "Terminating are removed immediately.",
                button="Yes, remove the finalizers")
        kind = self.resource_kind
        released, removed, failed = [], [], []
        for obj in list(queryset):
            label = str(obj)
            if not store.blocking_finalizers(kind, obj):
                continue
            try:
                store.patch(kind, getattr(obj, "namespace", None), obj.name,
                            self.force_finalize_patch(obj), context=self._context(request))
            except StatusError as exc:
                failed.append(f"{label}: {exc.message}")
                continue
            still_there = self.model.objects.filter(pk=obj.pk).exists()
            (released if still_there else removed).append(label)
        if released:
            self.message_user(request, f"Removed finalizers from {', '.join(released)}.",
                              messages.SUCCESS)
        if removed:
            self.message_user(request, f"Removed finalizers; these were Terminating and are "
                              f"now deleted: {', '.join(removed)}.", messages.SUCCESS)
        if not (released or removed or failed):
            self.message_user(request, "None of the selected objects had finalizers.",
                              messages.INFO)
        for line in failed:
            self.message_user(request, f"Could not remove finalizers from {line}",
                              messages.ERROR)
        return None
