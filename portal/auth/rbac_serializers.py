"""Wire shapes of the rbac.authorization.k8s.io/v1 kinds."""

from __future__ import annotations

from rest_framework import serializers

from portal.machinery import errors
from portal.machinery.serializers import StrictSerializer, field_error

RBAC_GROUP = "rbac.authorization.k8s.io"

VERBS_HINT = "get, list, watch, create, update, patch, delete, deletecollection, use, or *"


class PolicyRuleSerializer(StrictSerializer):
    """PolicyRule names the actions (verbs) allowed on some resources or non-resource URLs."""

    apiGroups = serializers.ListField(
        help_text=(
            'The API groups of the resources ("" is the core group, * all); required with '
            "resources."
        ),
        child=serializers.CharField(allow_blank=True),
        required=False,
    )
    resources = serializers.ListField(
        help_text=(
            "The resources (plurals such as runs, or runs/status) the rule applies to; * is all."
        ),
        child=serializers.CharField(),
        required=False,
    )
    verbs = serializers.ListField(
        help_text=(
            "What is allowed: get, list, watch, create, update, patch, delete, "
            "deletecollection, use, or * for all; at least one."
        ),
        child=serializers.CharField(),
        allow_empty=False,
    )
    resourceNames = serializers.ListField(
        help_text="Limits the rule to objects of these names; empty means any.",
        child=serializers.CharField(),
        required=False,
    )
    nonResourceURLs = serializers.ListField(
        help_text=(
            "URL paths (such as /healthz, or a prefix ending in *) the rule allows; for "
            "ClusterRoles."
        ),
        child=serializers.CharField(),
        required=False,
    )

    def validate(self, attrs):
        if attrs.get("resources") and "apiGroups" not in attrs:
            raise serializers.ValidationError(
                {
                    "apiGroups": field_error(
                        "resource rules must supply at least one api group", "FieldValueRequired"
                    ).detail
                }
            )
        if not attrs.get("resources") and not attrs.get("nonResourceURLs"):
            raise serializers.ValidationError(
                {
                    "resources": field_error(
                        "rules must supply resources or nonResourceURLs", "FieldValueRequired"
                    ).detail
                }
            )
        return attrs


class RoleRefSerializer(StrictSerializer):
    """RoleRef names the role a binding grants. Cannot be updated."""

    apiGroup = serializers.ChoiceField(
        help_text="Always rbac.authorization.k8s.io.", choices=[RBAC_GROUP]
    )
    kind = serializers.ChoiceField(
        help_text="Role (a RoleBinding's namespace's own) or ClusterRole.",
        choices=["Role", "ClusterRole"],
    )
    name = serializers.CharField(help_text="The role's name.")


class SubjectSerializer(StrictSerializer):
    """Subject is a user, a group or a service account a binding grants its role to."""

    kind = serializers.ChoiceField(
        help_text="User, Group or ServiceAccount.", choices=["User", "Group", "ServiceAccount"]
    )
    name = serializers.CharField(help_text="The user's, group's or service account's name.")
    namespace = serializers.CharField(
        help_text=(
            "A ServiceAccount's namespace (a RoleBinding's own when left out); users and "
            "groups have none."
        ),
        required=False,
        allow_blank=True,
    )
    apiGroup = serializers.CharField(
        help_text=(
            'rbac.authorization.k8s.io for users and groups, "" for service accounts; filled '
            "in when left out."
        ),
        required=False,
        allow_blank=True,
    )

    def validate(self, attrs):
        # Kubernetes defaults User/Group subjects to the RBAC group; ServiceAccounts have none.
        expected = "" if attrs["kind"] == "ServiceAccount" else RBAC_GROUP
        attrs.setdefault("apiGroup", expected)
        if attrs["apiGroup"] == "" and expected:
            attrs["apiGroup"] = expected
        if attrs["apiGroup"] != expected:
            raise serializers.ValidationError(
                {
                    "apiGroup": field_error(
                        f'must be "{expected}" for a {attrs["kind"]} subject',
                        "FieldValueNotSupported",
                    ).detail
                }
            )
        if attrs["kind"] != "ServiceAccount" and attrs.get("namespace"):
            raise serializers.ValidationError(
                {
                    "namespace": field_error(
                        f"a {attrs['kind']} subject has no namespace", "FieldValueForbidden"
                    ).detail
                }
            )
        return attrs


def cluster_binding_rules(new: dict, old: dict | None) -> list:
    """A ClusterRoleBinding grants only a ClusterRole, to ServiceAccounts named with their
    namespace (a RoleBinding defaults a ServiceAccount's namespace to its own)."""
    causes = []
    if (new.get("roleRef") or {}).get("kind") != "ClusterRole":
        causes.append(
            errors.not_supported(
                "roleRef.kind", (new.get("roleRef") or {}).get("kind"), ["ClusterRole"]
            )
        )
    for index, subject in enumerate(new.get("subjects") or []):
        if subject.get("kind") == "ServiceAccount" and not subject.get("namespace"):
            causes.append(errors.required(f"subjects[{index}].namespace"))
    return causes
