"""User impersonation as kube-apiserver does it (``kubectl --as``, ``--as-group``, ``--as-uid``).

A request authenticates as its sender; ``Impersonate-User``, ``Impersonate-Group``,
``Impersonate-Uid`` and ``Impersonate-Extra-<key>`` then replace who it is, once each value is
authorized for the sender with the ``impersonate`` verb:

- a user: ``users`` (core group ``""``), named by the username; a ServiceAccount username
  (``system:serviceaccount:<ns>:<name>``) asks for ``serviceaccounts`` in ``<ns>`` instead;
- each group: ``groups`` (core group); the uid: ``uids`` (``authentication.k8s.io``);
- each extra value: ``userextras/<key>`` (``authentication.k8s.io``), named by the value.

A refusal is the API server's 403 Status. The impersonated user has exactly the groups asked
for, plus ``system:authenticated`` (``system:unauthenticated`` for ``system:anonymous``): the
user's own groups are not looked up, as Kubernetes' authenticator does not know them. A
ServiceAccount without groups asked for gets ``system:serviceaccounts`` and
``system:serviceaccounts:<ns>``. Groups, a uid or extras without a user are a 400; headers
from an unauthenticated sender a 401.

Repeated headers reach Django joined with commas, so group and extra values are split on
commas (Kubernetes keeps each header line whole). Extra keys are lowercased and
percent-decoded, as kube-apiserver reads them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from urllib.parse import unquote

from portal.machinery import errors
from portal.machinery.admission import forbidden_resource

from .attributes import UserInfo
from .authorizer import review
from .identities import AUTHENTICATED
from .rbac import SERVICE_ACCOUNT_PREFIX
from .tokenreview import ClusterUser

log = logging.getLogger(__name__)

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_PREFIX = "Impersonate-Extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"


class ImpersonatedUser(ClusterUser):
    """``request.user`` of an impersonating request: the impersonated identity, which every
    review sees, and who sent it (``impersonator``), for the record."""

    def __init__(self, info: UserInfo, impersonator: UserInfo) -> None:
        super().__init__(info)
        self.impersonator = impersonator


def _values(raw: str | None) -> list[str]:
    return [v.strip() for v in (raw or "").split(",") if v.strip()]


def requested(headers: Mapping[str, str]) -> tuple[str, list[str], str, dict[str, list[str]]]:
    """(user, groups, uid, extra) as the headers ask; all empty when none is present."""
    extra: dict[str, list[str]] = {}
    for name, value in headers.items():
        if name.lower().startswith(EXTRA_PREFIX.lower()):
            key = unquote(name[len(EXTRA_PREFIX) :].lower())
            extra.setdefault(key, []).extend(_values(value))
    user = (headers.get(USER_HEADER) or "").strip()
    uid = (headers.get(UID_HEADER) or "").strip()
    return user, _values(headers.get(GROUP_HEADER)), uid, extra


def _service_account(username: str) -> tuple[str, str] | None:
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, _, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return (namespace, name) if namespace and name and ":" not in name else None


def _checks(user: str, groups: list[str], uid: str, extra: dict[str, list[str]]):
    """(group, resource, subresource, namespace, name) the sender must ``impersonate``."""
    account = _service_account(user)
    if account is not None:
        yield "", "serviceaccounts", "", account[0], account[1]
    else:
        yield "", "users", "", "", user
    for group in groups:
        yield "", "groups", "", "", group
    if uid:
        yield AUTHENTICATION_GROUP, "uids", "", "", uid
    for key, values in sorted(extra.items()):
        for value in values:
            yield AUTHENTICATION_GROUP, "userextras", key, "", value


def _groups(user: str, groups: list[str]) -> tuple[str, ...]:
    account = _service_account(user)
    if account is not None and not groups:
        groups = [SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{account[0]}"]
    if user == ANONYMOUS:
        return tuple(groups if UNAUTHENTICATED in groups else [*groups, UNAUTHENTICATED])
    if AUTHENTICATED in groups or UNAUTHENTICATED in groups:
        return tuple(groups)
    return (*groups, AUTHENTICATED)


def impersonate(sender, headers: Mapping[str, str]):
    """``sender`` itself when no impersonation header is present; else the impersonated user,
    once every value is allowed (a 400, 401 or 403 Status otherwise)."""
    user, groups, uid, extra = requested(headers)
    if not (user or groups or uid or extra):
        return sender
    if sender is None or not getattr(sender, "is_authenticated", False):
        raise errors.unauthorized("Unauthorized: impersonation needs an authenticated user")
    if not user:
        asked = [h for h, v in ((GROUP_HEADER, groups), (UID_HEADER, uid), ("extra", extra)) if v]
        raise errors.bad_request(
            f"requested {', '.join(asked)} without impersonating a user",
            [errors.required(USER_HEADER, "required with any other impersonation header")],
        )
    requester = UserInfo.of(sender)
    for group, resource, subresource, namespace, name in _checks(user, groups, uid, extra):
        decision = review(requester, "impersonate", group, resource, subresource, namespace, name)
        if not decision.allowed:
            raise forbidden_resource(
                resource, group, requester, "impersonate", namespace, name, subresource,
                decision.reason,
            )  # fmt: skip
    info = UserInfo(username=user, uid=uid, groups=_groups(user, groups), extra=extra)
    log.info("%s is impersonating %s (groups %s)", requester.username, user, list(info.groups))
    return ImpersonatedUser(info, requester)
