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
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from .attributes import Decision, NonResourceAttributes, ResourceAttributes, RuleList, UserInfo
from .identities import PRIVILEGED_GROUP, system_decision, system_rules
from .rbac import non_resource_rules_allow

__all__ = [
    "Decision",
    "NonResourceAttributes",
    "ResourceAttributes",
    "RuleList",
    "UserInfo",
    "budget",
    "get_authorizer",
    "review",
    "review_non_resource",
    "rules_review",
    "time_left",
]


class Authorizer(Protocol):
    def review(self, user: UserInfo, attributes: ResourceAttributes) -> Decision: ...

    def review_non_resource(
        self, user: UserInfo, attributes: NonResourceAttributes
    ) -> Decision: ...

    def rules(self, user: UserInfo, namespace: str) -> RuleList: ...


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


# Served to every authenticated user whichever authorizer runs (kube-apiserver's
# system:basic-user and system:discovery roles): asking what one may do, and discovery.
BASIC_RULES = (
    {
        "verbs": ["create"],
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
    },
    {
        "verbs": ["create"],
        "apiGroups": ["authentication.k8s.io"],
        "resources": ["selfsubjectreviews"],
    },
)
DISCOVERY_RULES = ({"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*"]},)
EVERYTHING = RuleList(
    ({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},),
    ({"verbs": ["*"], "nonResourceURLs": ["*"]},),
)


def review_non_resource(user, verb: str, path: str) -> Decision:
    """May ``user`` do ``verb`` on a path that is no resource (``/api``, ``/healthz``)?"""
    info = UserInfo.of(user)
    if info.is_superuser:
        return Decision(True, "superuser")
    if PRIVILEGED_GROUP in info.groups:
        return Decision(True, f'member of the privileged group "{PRIVILEGED_GROUP}"')
    if non_resource_rules_allow(DISCOVERY_RULES, verb, path):
        return Decision(True, "discovery is served to every authenticated user")
    controller_rules = system_rules(info)
    if controller_rules is not None:
        return Decision(non_resource_rules_allow(controller_rules, verb, path), "built-in policy")
    return get_authorizer().review_non_resource(info, NonResourceAttributes(verb, path))


def rules_review(user, namespace: str) -> RuleList:
    """Every rule ``user`` holds in ``namespace`` (and cluster-wide), as the configured
    authorizer can tell it, plus what every authenticated user may do."""
    info = UserInfo.of(user)
    if info.is_superuser or PRIVILEGED_GROUP in info.groups:
        return EVERYTHING
    controller_rules = system_rules(info)
    if controller_rules is not None:
        found = RuleList(
            tuple(r for r in controller_rules if r.get("resources")),
            tuple(r for r in controller_rules if r.get("nonResourceURLs")),
        )
    else:
        found = get_authorizer().rules(info, namespace)
    return RuleList(
        (*found.resource_rules, *BASIC_RULES),
        (*found.non_resource_rules, *DISCOVERY_RULES),
        found.incomplete,
        found.evaluation_error,
    )
