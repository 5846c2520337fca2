"""One authorization interface, two backends (local RBAC, SubjectAccessReview).

``review(user, verb, group, resource, subresource, namespace, name) -> Decision``; the API,
the admission webhook and admission checks such as ``persistentworkspaces/use`` all ask here.
``with budget(seconds):`` bounds the reviews asked inside it: a backend that waits on a remote
answer (SubjectAccessReview) waits at most ``time_left(...)``, and denies once it runs out.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


# The monotonic time by which the reviews being asked must be answered (None: no budget).
_deadline: ContextVar[float | None] = ContextVar("kruntimes_review_deadline", default=None)


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Reviews asked inside take at most ``seconds`` in all; a budget inside another keeps
    whichever ends first."""
    deadline = time.monotonic() + seconds
    current = _deadline.get()
    token = _deadline.set(deadline if current is None else min(current, deadline))
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left(default: float) -> float:
    """How long a review may wait now: ``default``, or less when a budget ends sooner (0 once
    it has run out)."""
    deadline = _deadline.get()
    if deadline is None:
        return default
    return max(0.0, min(default, deadline - time.monotonic()))


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
