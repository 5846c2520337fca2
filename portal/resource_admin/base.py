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

from typing import Any

from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured

from portal.machinery.registry import ResourceKind, registry

from .access import NamespaceAccessMixin
from .actions import ActionsMixin
from .cells import ListCellsMixin
from .detail import DetailMixin
from .events import EventsMixin
from .filters import FiltersMixin
from .forms import ManifestForm, ManifestFormMixin
from .scale import EstimatedCountPaginator


class ResourceAdmin(
    NamespaceAccessMixin,
    ListCellsMixin,
    FiltersMixin,
    DetailMixin,
    EventsMixin,
    ManifestFormMixin,
    ActionsMixin,
    admin.ModelAdmin,
):
    form = ManifestForm
    # at a million rows: an estimated count above a limit, and no second full count
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    change_list_template = "admin/resource/change_list.html"
    change_form_template = "admin/resource/change_form.html"
    delete_confirmation_template = "admin/resource/delete_confirmation.html"
    action_confirmation_template = "admin/resource/action_confirmation.html"
    actions = ["delete_objects", "remove_finalizers"]
    delete_action_label = "Delete (Kubernetes semantics)"
    search_help_text = (
        "Name, namespace or label text; key=value (or key, !key, key!=value) "
        "matches labels exactly."
    )
    # Extra read-only sections on the change page: [(title, {"fields": [...], ...}), ...];
    # every field named here is a method of the admin (it is added to readonly_fields).
    detail_fieldsets: list[tuple[str | None, dict]] = []
    # Extra list cells (admin methods or callables), shown before conditions/labels/age.
    extra_list_display: list[Any] = []

    @property
    def resource_kind(self) -> ResourceKind:
        kind = registry.for_model(self.model)
        if kind is None:
            raise ImproperlyConfigured(
                f"{self.model.__name__} has no registered ResourceKind; ResourceAdmin derives "
                "its pages from portal.machinery.registry"
            )
        return kind

    def has_phase(self) -> bool:
        return any(f.name == "phase" for f in self.model._meta.concrete_fields)

    def has_status(self) -> bool:
        kind = self.resource_kind
        return bool(kind.status_field) and hasattr(self.model, kind.attr(kind.status_field))

    def status_of(self, obj: Any) -> Any:
        kind = self.resource_kind
        return getattr(obj, kind.attr(kind.status_field), None) if kind.status_field else None
