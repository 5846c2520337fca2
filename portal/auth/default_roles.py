"""The user-facing ClusterRoles Kubernetes ships, ``view``, ``edit`` and ``admin``, built from
the registered kinds and ensured after every migrate.

As in Kubernetes: ``view`` reads every namespaced kind but Secrets (reading a Secret can
mean acting as whoever owns its credentials) and RBAC; ``edit`` also reads Secrets and writes
every namespaced kind but RBAC and ControllerRevisions (a controller's snapshots, only read);
``admin`` adds Roles and RoleBindings. ``edit`` (hence ``admin``) may also ``impersonate``
the namespace's ServiceAccounts, as Kubernetes' bootstrap policy grants; impersonating users,
groups, uids or extras is no default role's (only the privileged group's). A role whose
``rbac.authorization.kubernetes.io/autoupdate`` annotation is ``"true"`` (the default) is
brought back to these rules; set it to ``"false"`` to keep an edited copy.
"""

from __future__ import annotations

from typing import Any

from portal.machinery.registry import registry

RBAC_GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
SECRETS = ("", "secrets")
# Kubernetes' edit and admin only read these: a controller's snapshots are its own
CONTROLLER_OWNED = (("apps", "controllerrevisions"),)


def _resources(kind, verbs: list[str]) -> list[str]:
    names = [kind.plural]
    if kind.status_field:
        names.append(f"{kind.plural}/status")
    names += [f"{kind.plural}/{sub}" for sub in sorted(kind.subresources)]
    # served elsewhere (a Run's invoke): granted only by the roles holding one of their verbs,
    # so view never lists runs/invoke and edit may invoke what it may create
    names += [
        f"{kind.plural}/{sub}"
        for sub, allowed in sorted(kind.authorized_subresources.items())
        if set(allowed) & set(verbs)
    ]
    return names


def _by_group(include, verbs: list[str]) -> list[dict[str, Any]]:
    groups: dict[str, list[str]] = {}
    for kind in registry.kinds:
        if kind.namespaced and include(kind):
            groups.setdefault(kind.group, []).extend(_resources(kind, verbs))
    return [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": []}
        for group, resources in sorted(groups.items())
    ]


def _with_verbs(rules: list[dict[str, Any]], verbs: list[str]) -> list[dict[str, Any]]:
    return [{**rule, "verbs": list(verbs)} for rule in rules]


def default_cluster_roles() -> dict[str, list[dict[str, Any]]]:
    not_rbac = lambda kind: kind.group != RBAC_GROUP  # noqa: E731
    readable = _by_group(lambda kind: not_rbac(kind) and (kind.group, kind.plural) != SECRETS, READ)
    namespaces = {"apiGroups": [""], "resources": ["namespaces"], "verbs": list(READ)}
    view = [*_with_verbs(readable, READ), namespaces]
    secrets = {"apiGroups": [""], "resources": ["secrets"], "verbs": list(READ)}
    writable = lambda kind: not_rbac(kind) and (kind.group, kind.plural) not in CONTROLLER_OWNED  # noqa: E731
    # acting as the namespace's ServiceAccounts: edit can run workloads as them anyway
    impersonate = {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}
    edit = [*view, secrets, impersonate, *_with_verbs(_by_group(writable, WRITE), WRITE)]
    rbac = {"apiGroups": [RBAC_GROUP], "resources": ["rolebindings", "roles"]}
    admin = [*edit, {**rbac, "verbs": [*READ, *WRITE]}]
    return {"view": view, "edit": edit, "admin": admin}


def ensure_default_cluster_roles(**_signal: Any) -> int:
    """Create the missing ones, refresh the auto-updated ones, through the store as the
    local operator (as the API server bootstraps them); returns how many were written."""
    from portal.machinery import store
    from portal.machinery.admission import WriteContext
    from portal.models import ClusterRole

    from .identities import LOCAL_OPERATOR

    kind = registry.for_model(ClusterRole)
    if kind is None:  # a registry without the RBAC kinds (some tests)
        return 0
    context = WriteContext(user=LOCAL_OPERATOR)
    written = 0
    for name, rules in default_cluster_roles().items():
        role = ClusterRole.objects.filter(name=name).first()
        if role is None:
            manifest = {
                "metadata": {
                    "name": name,
                    "labels": dict(BOOTSTRAP_LABELS),
                    "annotations": {AUTOUPDATE: "true"},
                },
                "rules": rules,
            }
            store.create(kind, manifest, context=context)
            written += 1
        elif (role.annotations or {}).get(AUTOUPDATE, "true") == "true" and role.rules != rules:
            store.patch(kind, None, name, {"rules": rules}, context=context)
            written += 1
    return written
