"""Local RBAC with Kubernetes semantics over the Role/ClusterRole and binding rows.

The matching is plain functions over the wire dicts (``rule_allows``, ``subject_matches``),
mirroring ``k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac``; ``RBACAuthorizer`` only loads
the bindings that could name the user and the roles they reference (at most four queries).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from .attributes import Decision, NonResourceAttributes, ResourceAttributes, RuleList, UserInfo

ALL = "*"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
DENIED = "no RBAC rule matched"
# Names whose JSON text is the same on every database, so a text search can pre-filter subjects.
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9@.+:_-]+$")


def url_matches(pattern: str, path: str) -> bool:
    """A PolicyRule nonResourceURL: exact, ``*``, or a prefix ending in ``*``."""
    return pattern in ("*", path) or (pattern.endswith("*") and path.startswith(pattern[:-1]))


def non_resource_rules_allow(rules, verb: str, path: str) -> bool:
    return any(
        isinstance(rule, dict)
        and any(v in ("*", verb) for v in rule.get("verbs") or ())
        and any(url_matches(p, path) for p in rule.get("nonResourceURLs") or ())
        for rule in rules or ()
    )


def verb_matches(rule: dict, verb: str) -> bool:
    return any(v in (ALL, verb) for v in rule.get("verbs") or ())


def api_group_matches(rule: dict, group: str) -> bool:
    return any(g in (ALL, group) for g in rule.get("apiGroups") or ())


def resource_matches(rule: dict, resource: str, subresource: str) -> bool:
    """``*`` matches everything, ``runs`` only ``runs``, ``*/status`` any ``<plural>/status``."""
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in rule.get("resources") or ():
        if candidate in (ALL, combined):
            return True
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def resource_name_matches(rule: dict, name: str) -> bool:
    """An empty ``resourceNames`` allows every name; otherwise the request must name one."""
    names = rule.get("resourceNames") or ()
    return not names or (bool(name) and name in names)


def rule_allows(rule: dict, attrs: ResourceAttributes) -> bool:
    """Does one PolicyRule allow this resource request?"""
    return (
        verb_matches(rule, attrs.verb)
        and api_group_matches(rule, attrs.group)
        and resource_matches(rule, attrs.resource, attrs.subresource)
        and resource_name_matches(rule, attrs.name)
    )


def subject_matches(subject: dict, user: UserInfo, binding_namespace: str) -> bool:
    """Does a binding subject name this user? A ServiceAccount without a namespace means one in
    the binding's own namespace (Kubernetes defaults it the same way)."""
    kind, name = subject.get("kind"), subject.get("name")
    if not name:
        return False
    if kind == "User":
        return user.username == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return bool(namespace) and user.username == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def service_account_name(username: str) -> str:
    """``system:serviceaccount:<ns>:<name>`` -> ``<name>``; "" for any other username."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return ""
    namespace, _, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return name if namespace and name and ":" not in name else ""


def subject_prefilter(user: UserInfo) -> Q:
    """A database filter keeping every binding that could name the user (a superset; the exact
    check is ``subject_matches``). Names whose JSON text may differ by database load everything."""
    names = {user.username, *user.groups, service_account_name(user.username)} - {""}
    if not all(_PLAIN_NAME.match(name) for name in names):
        return Q()
    query = Q(pk__in=[])
    for name in sorted(names):
        query |= Q(subjects__icontains=json.dumps(name))
    return query


@dataclass(frozen=True)
class Grant:
    """One binding that names the user (through ``subject``), with the role it references."""

    binding_kind: str
    binding: Any  # a ClusterRoleBinding or RoleBinding row
    subject: dict
    role_kind: str
    role_name: str

    def describe(self) -> str:
        where = (
            f' in namespace "{self.binding.namespace}"'
            if self.binding_kind == "RoleBinding"
            else ""
        )
        return (
            f'RBAC: allowed by {self.binding_kind} "{self.binding.name}"{where} of '
            f'{self.role_kind} "{self.role_name}" to {self.subject["kind"]} '
            f'"{self.subject["name"]}"'
        )


def grants_for(bindings: Iterable, binding_kind: str, user: UserInfo) -> list[Grant]:
    """The bindings naming the user; a ClusterRoleBinding can only grant a ClusterRole."""
    grants = []
    for binding in bindings:
        namespace = getattr(binding, "namespace", "") or ""
        role_ref = binding.role_ref if isinstance(binding.role_ref, dict) else {}
        role_kind, role_name = role_ref.get("kind"), role_ref.get("name")
        if role_kind not in ("Role", "ClusterRole") or not role_name:
            continue
        if binding_kind == "ClusterRoleBinding" and role_kind != "ClusterRole":
            continue
        subjects = binding.subjects if isinstance(binding.subjects, list) else []
        subject = next(
            (s for s in subjects if isinstance(s, dict) and subject_matches(s, user, namespace)),
            None,
        )
        if subject is not None:
            grants.append(Grant(binding_kind, binding, subject, role_kind, role_name))
    return grants


def rules_allow(rules, attrs: ResourceAttributes) -> bool:
    return isinstance(rules, list) and any(
        isinstance(rule, dict) and rule_allows(rule, attrs) for rule in rules
    )


class RBACAuthorizer:
    """Allowed if a ClusterRoleBinding, or a RoleBinding in the request's namespace, binds the
    user to a role with a matching rule. Terminating objects still count until they are gone,
    as in Kubernetes; a binding whose role does not exist grants nothing."""

    def review(self, user: UserInfo, attrs: ResourceAttributes) -> Decision:
        from .rbac_models import ClusterRole, ClusterRoleBinding, Role, RoleBinding

        who = subject_prefilter(user)
        fields = ("name", "role_ref", "subjects")
        grants = grants_for(
            ClusterRoleBinding.objects.filter(who).only(*fields).order_by("name"),
            "ClusterRoleBinding",
            user,
        )
        if attrs.namespace:
            bindings = (
                RoleBinding.objects.filter(who, namespace=attrs.namespace)
                .only("namespace", *fields)
                .order_by("name")
            )
            grants += grants_for(bindings, "RoleBinding", user)
        if not grants:
            return Decision(False, DENIED)
        cluster_roles = _rules_by_name(
            ClusterRole, {g.role_name for g in grants if g.role_kind == "ClusterRole"}
        )
        roles = _rules_by_name(
            Role, {g.role_name for g in grants if g.role_kind == "Role"}, attrs.namespace
        )
        for grant in grants:
            rules = (cluster_roles if grant.role_kind == "ClusterRole" else roles).get(
                grant.role_name
            )
            if rules_allow(rules, attrs):
                return Decision(True, grant.describe())
        return Decision(False, DENIED)

    def review_non_resource(self, user: UserInfo, attrs: NonResourceAttributes) -> Decision:
        if non_resource_rules_allow(rules_of(user), attrs.verb, attrs.path):
            return Decision(True, "RBAC: allowed by a nonResourceURLs rule")
        return Decision(False, DENIED)

    def rules(self, user: UserInfo, namespace: str) -> RuleList:
        rules = rules_of(user, namespace)
        return RuleList(
            tuple(_resource_rule(r) for r in rules if r.get("resources")),
            tuple(
                {"verbs": r.get("verbs") or [], "nonResourceURLs": r["nonResourceURLs"]}
                for r in rules
                if r.get("nonResourceURLs")
            ),
        )


def _resource_rule(rule: dict) -> dict:
    """A PolicyRule as a SelfSubjectRulesReview's ResourceRule."""
    found = {key: rule.get(key) or [] for key in ("verbs", "apiGroups", "resources")}
    if rule.get("resourceNames"):
        found["resourceNames"] = rule["resourceNames"]
    return found


def rules_of(user: UserInfo, namespace: str = "") -> list[dict]:
    """Every rule bound to the user cluster-wide, plus in ``namespace`` (escalation checks)."""
    from .rbac_models import ClusterRole, ClusterRoleBinding, Role, RoleBinding

    who = subject_prefilter(user)
    grants = grants_for(ClusterRoleBinding.objects.filter(who), "ClusterRoleBinding", user)
    if namespace:
        grants += grants_for(
            RoleBinding.objects.filter(who, namespace=namespace), "RoleBinding", user
        )
    cluster_roles = _rules_by_name(
        ClusterRole, {g.role_name for g in grants if g.role_kind == "ClusterRole"}
    )
    roles = _rules_by_name(Role, {g.role_name for g in grants if g.role_kind == "Role"}, namespace)
    rules: list[dict] = []
    for grant in grants:
        found = (cluster_roles if grant.role_kind == "ClusterRole" else roles).get(grant.role_name)
        rules += [rule for rule in found or [] if isinstance(rule, dict)]
    return rules


def _rules_by_name(model, names: set[str], namespace: str | None = None) -> dict[str, list]:
    if not names:
        return {}
    query = model.objects.filter(name__in=names)
    if namespace is not None:
        query = query.filter(namespace=namespace)
    return dict(query.values_list("name", "rules"))
