"""One authorization interface, two backends (local RBAC, SubjectAccessReview).

``review(user, verb, group, resource, subresource, namespace, name) -> Decision``; the API,
the admission webhook and admission checks such as ``persistentworkspaces/use`` all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class UserInfo:
    """The subject as Kubernetes sees it (authentication.k8s.io/v1 UserInfo)."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    is_superuser: bool = False

    @classmethod
    def of(cls, user) -> UserInfo:
        """A UserInfo as it is, or the one of a Django user."""
        return user if isinstance(user, UserInfo) else cls.from_django(user)

    @classmethod
    def from_django(cls, user) -> UserInfo:
        if user is None or not getattr(user, "is_authenticated", False):
            return cls(username="system:anonymous", groups=("system:unauthenticated",))
        # "system:" names are reserved for the identities the portal makes itself
        # (portal.auth.identities): a Django group cannot confer them.
        names = sorted(g.name for g in user.groups.all() if not g.name.startswith("system:"))
        groups = (*names, "system:authenticated")
        return cls(
            username=user.get_username(),
            uid=str(user.pk),
            groups=groups,
            is_superuser=bool(user.is_superuser),
        )


@dataclass(frozen=True)
class ResourceAttributes:
    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    version: str = ""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer(Protocol):
    def review(self, user: UserInfo, attributes: ResourceAttributes) -> Decision: ...


BACKENDS = {
    "rbac": "portal.auth.rbac.RBACAuthorizer",
    "subjectaccessreview": "portal.auth.sar.SubjectAccessReviewAuthorizer",
}


@lru_cache(maxsize=4)
def _backend(name: str) -> Authorizer:
    try:
        return import_string(BACKENDS[name])()
    except KeyError:
        raise ValueError(
            f"unknown KRUNTIMES_AUTHORIZER {name!r}; use one of {sorted(BACKENDS)}"
        ) from None


def get_authorizer() -> Authorizer:
    return _backend(settings.KRUNTIMES_AUTHORIZER)


def review(
    user,
    verb: str,
    group: str,
    resource: str,
    subresource: str = "",
    namespace: str = "",
    name: str = "",
    version: str = "",
) -> Decision:
    """May ``user`` (a Django user or a UserInfo) do ``verb`` on the resource?

    Superusers may; then the built-in policy decides for the privileged group and the portal's
    controllers (``identities``); everyone else is asked of the configured authorizer."""
    from .identities import system_decision

    info = UserInfo.of(user)
    if info.is_superuser:
        return Decision(True, "superuser")
    attributes = ResourceAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace or "",
        name=name or "",
        version=version,
    )
    return system_decision(info, attributes) or get_authorizer().review(info, attributes)
