"""A namespaced kind's admin pages show a staff user the rows RBAC lets them ``list``: the
change list, the change page and every action work on the namespaces where the API would
answer them (Django's model permissions still decide which pages a staff user may open)."""

from __future__ import annotations

from portal.auth.namespaces import visible_namespaces
from portal.machinery.registry import registry


class NamespaceAccessMixin:
    def get_queryset(self, request):
        queryset = super().get_queryset(request)  # type: ignore[misc]
        kind = registry.for_model(self.model)  # type: ignore[attr-defined]
        if kind is None or not kind.namespaced or request.user.is_superuser:
            return queryset
        return queryset.filter(
            namespace__in=visible_namespaces(request.user, kind.group, kind.plural)
        )
