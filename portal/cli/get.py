"""``get``: fetching the objects of one kind, by name or as a (label-filtered) list."""

from __future__ import annotations

from typing import Any

from portal.auth.authorizer import UserInfo
from portal.auth.identities import LOCAL_OPERATOR
from portal.machinery import store
from portal.machinery.admission import authorize
from portal.machinery.errors import StatusError
from portal.machinery.listing import list_objects

from .errors import CLIError, status_lines
from .resolve import ResourceGroup, request_namespace


def fetch(
    group: ResourceGroup,
    namespace: str | None,
    all_namespaces: bool,
    selector: str = "",
    user: UserInfo = LOCAL_OPERATOR,
) -> tuple[list[Any], list[str]]:
    """The objects of one kind: the named ones, else the list (``-l`` filtered), each read
    authorized for ``user`` as the API would."""
    if all_namespaces and group.names and group.kind.namespaced:
        raise CLIError.client("a resource cannot be retrieved by name across all namespaces")
    ns = None if all_namespaces else request_namespace(group.kind, namespace)
    context = store.WriteContext(user=user)
    if not group.names:
        try:
            authorize(context, group.kind, "list", ns)
            items, _ = list_objects(group.kind, ns, {"labelSelector": selector or ""})
        except StatusError as exc:
            raise CLIError.from_status(exc) from exc
        return items, []
    objects, problems = [], []
    for name in group.names:
        try:
            authorize(context, group.kind, "get", ns, name)
            objects.append(store.get_object(group.kind, ns, name))
        except StatusError as exc:
            problems += status_lines(exc)
    return objects, problems
