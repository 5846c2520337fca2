"""Who writes, and the first step of every write: authorize.

The chain is authorize → defaulting (the kind's ``defaulting`` hooks, on create) → validate
(serializers, kind validators) → admission checks (the kind's ``admission`` hooks, e.g. RBAC
escalation) → persist, and ``store`` runs all of it for
every write, whoever starts it: a REST request, the admin, a management command or a
controller. Each of them passes a ``WriteContext`` naming its user; there is no write without
one. The REST views authorize before they read the body (as the Kubernetes API server does);
the context remembers that grant so the store does not ask twice.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from portal.auth.authorizer import UserInfo, review

from . import errors
from .write_context import Grant, WriteContext

__all__ = ["Grant", "WriteContext", "authorize", "forbidden"]

if TYPE_CHECKING:
    from .registry import ResourceKind


def authorize(
    context: WriteContext,
    kind: ResourceKind,
    verb: str,
    namespace: str | None,
    name: str = "",
    subresource: str = "",
) -> WriteContext:
    """Allow ``context.user`` to ``verb`` the object or raise 403; returns the context with the
    grant remembered."""
    grant = (verb, kind.key, subresource, namespace or "", name or "")
    if grant in context.granted:
        return context
    user = context.user_info
    decision = review(
        user, verb, kind.group, kind.plural, subresource, namespace or "", name, kind.version
    )
    if not decision.allowed:
        raise forbidden(kind, user, verb, namespace, name, subresource, decision.reason)
    return dataclasses.replace(context, granted=context.granted | {grant})


def forbidden(
    kind: ResourceKind,
    user: UserInfo,
    verb: str,
    namespace: str | None,
    name: str,
    subresource: str,
    reason: str,
) -> errors.StatusError:
    """The API server's 403 text: ``runs.kruntimes.io "x" is forbidden: User "u" cannot ...``."""
    return forbidden_resource(
        kind.plural, kind.group, user, verb, namespace, name, subresource, reason
    )


def forbidden_resource(
    plural: str,
    group: str,
    user: UserInfo,
    verb: str,
    namespace: str | None,
    name: str,
    subresource: str = "",
    reason: str = "",
) -> errors.StatusError:
    """The same 403 for any resource, served here or not (``users`` for impersonation)."""
    resource = f"{plural}/{subresource}" if subresource else plural
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    subject = f"{plural}.{group}" if group else plural
    target = f'{subject} "{name}"' if name else subject
    because = f": {reason}" if reason else ""
    return errors.forbidden_status(
        f'{target} is forbidden: User "{user.username}" cannot {verb} '
        f'resource "{resource}" in API group "{group}"{where}{because}',
        plural,
        group,
        name,
    )
