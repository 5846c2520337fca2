"""The kinds the portal itself serves: v1 Namespace, Secret, ConfigMap, apps/v1
ControllerRevision and the rbac.authorization.k8s.io kinds."""

from __future__ import annotations

from rest_framework import serializers

from portal.auth.escalation import binding_admission, role_admission
from portal.auth.rbac_serializers import (
    RBAC_GROUP,
    PolicyRuleSerializer,
    RoleRefSerializer,
    SubjectSerializer,
    cluster_binding_rules,
)
from portal.config_kinds import register_config_kinds
from portal.event_kinds import register_event_kinds
from portal.machinery import errors
from portal.machinery.registry import Column, ResourceKind, ReviewKind, registry
from portal.machinery.serializers import StrictSerializer
from portal.machinery.strategic_merge import Field
from portal.revision_kinds import register_revision_kinds

RBAC_DESCRIPTIONS = {
    "Role": "Role is a namespaced set of rules granting access to resources of its namespace.",
    "ClusterRole": "ClusterRole is a cluster-wide set of rules granting access to resources "
    "of any namespace, cluster-scoped resources or non-resource URLs.",
    "RoleBinding": "RoleBinding grants a Role or ClusterRole to subjects, within the "
    "binding's namespace.",
    "ClusterRoleBinding": "ClusterRoleBinding grants a ClusterRole to subjects across the "
    "whole cluster.",
}


class NamespaceSpecSerializer(StrictSerializer):
    """NamespaceSpec describes the attributes of a Namespace."""

    finalizers = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=lambda: ["kubernetes"],
        help_text="Names that must each be removed before the Namespace goes away once "
        "deleted; kubernetes (the default) is removed when the Namespace's objects are gone.",
    )


class NamespaceStatusSerializer(StrictSerializer):
    """NamespaceStatus is the observed state of a Namespace, set by the server."""

    phase = serializers.ChoiceField(
        choices=["Active", "Terminating"],
        required=False,
        help_text="Active, or Terminating once deleted and while its objects are removed.",
    )
    conditions = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The latest observations of the Namespace's state.",
    )


def namespace_spec_finalizers(namespace) -> list[str]:
    """A Namespace stays Terminating while ``spec.finalizers`` (``kubernetes``) remain."""
    return list((namespace.spec or {}).get("finalizers") or [])


def on_namespace_change(namespace, event: str) -> None:
    """A Namespace that starts terminating has its content collected now, not at the next
    beat."""
    from portal import task_names
    from portal.machinery.events import send_on_commit

    if event == "MODIFIED" and namespace.deletion_timestamp is not None:
        send_on_commit(task_names.GARBAGE_COLLECT)


def role_ref_immutable(new: dict, old: dict | None) -> list:
    if old is not None and new.get("roleRef") != old.get("roleRef"):
        return [errors.invalid("roleRef", "cannot change roleRef")]
    return []


def register_access_reviews() -> None:
    from portal.auth import access_reviews as reviews

    for kind, plural, answer in (
        ("SelfSubjectAccessReview", "selfsubjectaccessreviews", reviews.self_subject_access_review),
        ("SelfSubjectRulesReview", "selfsubjectrulesreviews", reviews.self_subject_rules_review),
    ):
        registry.register_review(ReviewKind(reviews.GROUP, reviews.VERSION, kind, plural, answer))
    from portal.auth import self_subject_review as whoami

    registry.register_review(
        ReviewKind(
            whoami.GROUP,
            whoami.VERSION,
            whoami.KIND,
            whoami.PLURAL,
            whoami.self_subject_review,
            has_spec=False,
        )
    )


def register_portal_kinds() -> None:
    register_access_reviews()
    from portal.models import ClusterRole, ClusterRoleBinding, Namespace, Role, RoleBinding

    registry.register(
        ResourceKind(
            group="",
            version="v1",
            kind="Namespace",
            plural="namespaces",
            description=(
                "Namespace is a scope for names: most kinds' objects live in one, and deleting "
                "it deletes them."
            ),
            model=Namespace,
            namespaced=False,
            short_names=("ns",),
            name_is_label=True,
            protected_names=("default",),
            extra_finalizers=namespace_spec_finalizers,
            # core/v1: spec.finalizers is +listType=atomic (replaced); status.conditions is
            # patchStrategy merge, patchMergeKey type
            strategic_merge={
                "status": Field(fields={"conditions": Field(merge=True, merge_key="type")})
            },
            on_change=(on_namespace_change,),
            body={"spec": NamespaceSpecSerializer, "status": NamespaceStatusSerializer},
            columns=(Column("STATUS", lambda o: o.phase),),
        )
    )
    register_config_kinds()
    register_event_kinds()
    register_revision_kinds()
    rules = {
        "rules": PolicyRuleSerializer(
            many=True, help_text="The rules; the role grants what any of them allows."
        )
    }
    binding = {
        "roleRef": RoleRefSerializer,
        "subjects": SubjectSerializer(
            many=True, help_text="Who is granted the role: users, groups or service accounts."
        ),
    }
    role_ref_column = Column("ROLE", lambda o: f"{o.role_ref.get('kind')}/{o.role_ref.get('name')}")
    for kind, plural, model, namespaced in (
        ("Role", "roles", Role, True),
        ("ClusterRole", "clusterroles", ClusterRole, False),
    ):
        registry.register(
            ResourceKind(
                group=RBAC_GROUP,
                version="v1",
                kind=kind,
                plural=plural,
                description=RBAC_DESCRIPTIONS[kind],
                model=model,
                namespaced=namespaced,
                body=rules,
                status=None,
                generation_fields=("rules",),
                strategic_merge={},  # rbac/v1 rules: no patch strategy, replaced whole
                admission=(role_admission,),
                columns=(Column("RULES", lambda o: len(o.rules or [])),),
            )
        )
    for kind, plural, model, namespaced, validators in (
        ("RoleBinding", "rolebindings", RoleBinding, True, (role_ref_immutable,)),
        (
            "ClusterRoleBinding",
            "clusterrolebindings",
            ClusterRoleBinding,
            False,
            (role_ref_immutable, cluster_binding_rules),
        ),
    ):
        registry.register(
            ResourceKind(
                group=RBAC_GROUP,
                version="v1",
                kind=kind,
                plural=plural,
                description=RBAC_DESCRIPTIONS[kind],
                model=model,
                namespaced=namespaced,
                body=binding,
                status=None,
                generation_fields=("roleRef", "subjects"),
                strategic_merge={},  # rbac/v1 subjects: no patch strategy, replaced whole
                validators=validators,
                admission=(binding_admission,),
                columns=(role_ref_column,),
            )
        )
