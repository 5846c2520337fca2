"""RBAC escalation prevention, as the Kubernetes API server does it.

- Creating or updating a Role/ClusterRole requires the writer to hold every permission its
  rules grant (in the Role's namespace, or cluster-wide for a ClusterRole), or the ``escalate``
  verb on that role.
- Creating or updating a RoleBinding/ClusterRoleBinding requires the writer to hold every
  permission of the referenced role in the binding's scope, or the ``bind`` verb on that role.

"Holds" is asked of the same authorizer that serves requests, one atomic permission (verb,
group, resource, name) at a time, so it holds for local RBAC and SubjectAccessReview alike;
a wildcard in a granted rule is held only through the same wildcard. ``nonResourceURLs`` can
only be checked against local RBAC rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from portal.machinery import errors

from .authorizer import UserInfo, review
from .rbac_serializers import RBAC_GROUP

SHOWN_MISSING = 5


def atomic_permissions(rule: dict) -> Iterator[tuple[str, str, str, str, str]]:
    """(verb, group, resource, subresource, name) for each permission a resource rule grants."""
    names = rule.get("resourceNames") or [""]
    for verb in rule.get("verbs") or ():
        for group in rule.get("apiGroups") or ():
            for resource in rule.get("resources") or ():
                plural, _, subresource = resource.partition("/")
                for name in names:
                    yield verb, group, plural, subresource, name


def _url_covered(url: str, held: list[dict], verb: str) -> bool:
    for rule in held:
        if not any(v in ("*", verb) for v in rule.get("verbs") or ()):
            continue
        for pattern in rule.get("nonResourceURLs") or ():
            if (
                pattern == url
                or pattern == "*"
                or (pattern.endswith("*") and url.startswith(pattern[:-1]))
            ):
                return True
    return False


def missing_permissions(user: UserInfo, rules: list, namespace: str) -> list[str]:
    """What ``rules`` grant that ``user`` does not hold in ``namespace`` ("" = cluster-wide),
    each as a short Kubernetes-style description."""
    if user.is_superuser:
        return []
    missing: list[str] = []
    held_rules: list[dict] | None = None
    for rule in rules if isinstance(rules, list) else []:
        if not isinstance(rule, dict):
            continue
        for verb, group, plural, subresource, name in atomic_permissions(rule):
            if not review(user, verb, group, plural, subresource, namespace, name).allowed:
                resource = f"{plural}/{subresource}" if subresource else plural
                named = f", ResourceNames:[{name!r}]" if name else ""
                missing.append(
                    f'{{APIGroups:["{group}"], Resources:["{resource}"]{named}, Verbs:["{verb}"]}}'
                )
        for url in rule.get("nonResourceURLs") or ():
            if held_rules is None:
                held_rules = held_rules_of(user, namespace)
            for verb in rule.get("verbs") or ():
                if not _url_covered(url, held_rules, verb):
                    missing.append(f'{{NonResourceURLs:["{url}"], Verbs:["{verb}"]}}')
    return missing


def held_rules_of(user: UserInfo, namespace: str) -> list[dict]:
    """The user's rules from local RBAC (cluster-wide, plus ``namespace``'s); empty for any
    other authorizer."""
    from django.conf import settings

    if settings.KRUNTIMES_AUTHORIZER != "rbac":
        return []
    from .rbac import rules_of

    return rules_of(user, namespace)


def _forbidden(kind: Any, name: str, user: UserInfo, missing: list[str], why: str):
    shown = ", ".join(missing[:SHOWN_MISSING])
    more = f" and {len(missing) - SHOWN_MISSING} more" if len(missing) > SHOWN_MISSING else ""
    return errors.forbidden_status(
        f'{kind.plural}.{kind.group} "{name}" is forbidden: user "{user.username}" is '
        f"attempting to grant RBAC permissions not currently held: {shown}{more} ({why})",
        kind.plural,
        kind.group,
        name,
    )


def _user(context: Any) -> UserInfo:
    """The writer: every write has one (the store's admission chain requires a context)."""
    return UserInfo.of(context.user)


def role_admission(kind: Any, new: dict, old: dict | None, context: Any) -> None:
    """Role/ClusterRole writes: hold every granted permission, or ``escalate`` on the role."""
    user = _user(context)
    meta = new.get("metadata") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace", "") if kind.namespaced else ""
    if old is not None and new.get("rules") == old.get("rules"):
        return  # metadata-only update: nothing more is granted
    if review(user, "escalate", RBAC_GROUP, kind.plural, "", namespace, name).allowed:
        return
    missing = missing_permissions(user, new.get("rules") or [], namespace)
    if missing:
        raise _forbidden(kind, name, user, missing, f'or the "escalate" verb on {kind.plural}')


def binding_admission(kind: Any, new: dict, old: dict | None, context: Any) -> None:
    """RoleBinding/ClusterRoleBinding writes: hold every permission of the referenced role in
    the binding's scope, or ``bind`` on that role."""
    user = _user(context)
    from portal.models import ClusterRole, Role

    meta = new.get("metadata") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace", "") if kind.namespaced else ""
    role_ref = new.get("roleRef") or {}
    role_kind, role_name = role_ref.get("kind"), role_ref.get("name", "")
    if (
        old is not None
        and new.get("roleRef") == old.get("roleRef")
        and new.get("subjects") == old.get("subjects")
    ):
        return
    role_plural = "roles" if role_kind == "Role" else "clusterroles"
    if review(user, "bind", RBAC_GROUP, role_plural, "", namespace, role_name).allowed:
        return
    model = Role if role_kind == "Role" else ClusterRole
    query = model.objects.filter(name=role_name)
    if role_kind == "Role":
        query = query.filter(namespace=namespace)
    rules = query.values_list("rules", flat=True).first()
    if rules is None:
        raise errors.forbidden_status(
            f'{kind.plural}.{kind.group} "{name}" is forbidden: {role_kind} "{role_name}" '
            f'not found, and user "{user.username}" may not "bind" it',
            kind.plural,
            kind.group,
            name,
        )
    missing = missing_permissions(user, rules, namespace)
    if missing:
        raise _forbidden(
            kind, name, user, missing, f'or the "bind" verb on {role_plural} "{role_name}"'
        )
