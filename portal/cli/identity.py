"""Who a management command acts as: ``--as USER`` (``--as-group GROUP``...), else the local
operator.

The default is ``system:admin`` in ``system:masters`` (``portal.auth.identities``): whoever
runs ``manage.py`` on the portal's host already holds its database, so the command acts with
cluster-admin, and ``make demo`` works on a fresh database. ``--as`` makes the command go
through the same authorization and admission checks as that user's API requests would: a
portal user by that username (with their groups), or, as kubectl's impersonation allows, any
username with the groups given.
"""

from __future__ import annotations

from typing import Any

from portal.auth.authorizer import UserInfo
from portal.auth.identities import AUTHENTICATED, LOCAL_OPERATOR

from .errors import CLIError


def add_identity_arguments(parser: Any) -> None:
    parser.add_argument(
        "--as",
        dest="as_user",
        metavar="USER",
        default="",
        help=f"act as this user (default: the local operator {LOCAL_OPERATOR.username}, "
        "cluster-admin)",
    )
    parser.add_argument(
        "--as-group",
        dest="as_groups",
        action="append",
        default=[],
        metavar="GROUP",
        help="with --as: a group to act as (repeatable)",
    )


def identity(as_user: str = "", as_groups: list[str] | tuple[str, ...] = ()) -> UserInfo:
    if not as_user:
        if as_groups:
            raise CLIError.client("--as-group needs --as USER")
        return LOCAL_OPERATOR
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(username=as_user).first()
    if user is not None and not user.is_active:
        raise CLIError.client(f'user "{as_user}" is not active')
    base = UserInfo.from_django(user) if user is not None else UserInfo(username=as_user)
    groups = tuple(dict.fromkeys([*base.groups, *as_groups, AUTHENTICATED]))
    return UserInfo(
        username=base.username, uid=base.uid, groups=groups, is_superuser=base.is_superuser
    )


def identity_of(options: dict[str, Any]) -> UserInfo:
    return identity(options.get("as_user") or "", options.get("as_groups") or ())
