"""Which namespaces a user may see a resource in: one RBAC ``list`` review per namespace.

The console (the overview's tiles, every namespaced kind's admin pages) shows a staff user
only what the API would list for them; superusers see everything without a review.
"""

from __future__ import annotations

from collections.abc import Iterable


def visible_namespaces(
    user, group: str, resource: str, only: str = "", limit: int | None = None
) -> list[str]:
    """Namespaces (``only`` that one; at most ``limit`` of them, by name) where ``user`` may
    ``list`` ``resource`` of ``group``."""
    from portal.models import Namespace

    from .authorizer import review

    names: Iterable[str] = (
        [only] if only else Namespace.objects.order_by("name").values_list("name", flat=True)
    )
    if limit is not None and not only:
        names = list(names)[:limit]
    return [ns for ns in names if review(user, "list", group, resource, namespace=ns).allowed]
