"""List filters (namespace, phase, terminating, label) and label-selector search."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.db.models.fields.json import KeyTransform

from .render import label_pairs
from .scale import NamespaceFilter

# The label filter offers the most common key=value pairs of this many most recent objects.
# a UID as a label value (a controller's link to its parent, one value per parent) filters
# to one family of objects: searched for (``k=v`` in the search box), never offered as a choice
UID_VALUE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
LABEL_FILTER_SAMPLE = 500
LABEL_FILTER_CHOICES = 40


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
            ~Q(labels__has_key=key) | ~Q(**{alias: value})
        )
    if "=" in term:
        key, _, value = term.partition("=")
        value = value[1:] if value.startswith("=") else value
        return queryset.alias(**{alias: KeyTransform(key.strip(), "labels")}).filter(
            **{alias: value.strip()}
        )
    if term.startswith("!"):
        return queryset.exclude(labels__has_key=term[1:].strip())
    return queryset.filter(labels__has_key=term)


class LabelFilter(admin.SimpleListFilter):
    """The most common ``key=value`` pairs among the newest objects (a bounded sample), UID
    values left out."""

    title = "label"
    parameter_name = "label"

    def lookups(self, request, model_admin):
        sample = (
            model_admin.get_queryset(request)
            .order_by("-creation_timestamp")
            .values_list("labels", flat=True)[:LABEL_FILTER_SAMPLE]
        )
        counts: Counter = Counter()
        for labels in sample:
            counts.update(f"{k}={v}" for k, v in label_pairs(labels) if not UID_VALUE.match(v))
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


class FiltersMixin:
    """The change list's filters and search."""

    def get_list_filter(self, request):
        filters: list[Any] = []
        if self.resource_kind.namespaced:
            filters.append(NamespaceFilter)  # choices from the Namespace table
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
